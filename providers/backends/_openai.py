"""The OpenAI-compatible provider, on the official ``openai`` client (``AsyncOpenAI``).

One provider entry is one backend (a base URL and a key): OpenAI itself, Azure
OpenAI's v1 endpoint, Ollama, vLLM, LM Studio, OpenRouter and the like.

Rules:

* The wire mapping lives in :mod:`providers.backends._openai_wire` and the reading of
  replies in :mod:`providers.backends._openai_json`; this module does the I/O and the
  streaming, and :mod:`providers.backends._client` maps the failures.
* The body built by ``_openai_wire`` is already in wire form, so it is posted
  as it is with the client's ``post`` (what ``chat.completions.create`` does
  after converting its arguments, with the same bearer auth) to the endpoint's
  full URL, made once, and the reply comes back as the raw HTTP response
  (``cast_to=httpx.Response``), read by :mod:`providers.backends._openai_json` with
  orjson: the client's argument conversion, response models and stream
  decoder cost more CPU than the HTTP exchange. Its retries, error classes
  and auth apply unchanged: a failure while the body is read is the client's
  ``APITimeoutError`` or ``APIConnectionError``, and an error event in a
  stream its ``APIError``, as the client's own stream would raise them.
* The ``openai`` client gets an ordinary httpx client on the transport of
  :mod:`providers.backends._calls` (the pool, the size cap, a read timeout that ends
  the call), each request tagged as its call's through the client's public
  ``options={"headers": ...}`` (``extra_headers`` for the model listing), and
  :mod:`providers.backends._client` maps the failures, alike for every SDK-based
  provider; httpx's pool walks every
  connection on every request, which costs milliseconds per call at a
  thousand connections (docs/performance.md, "The provider call and the HTTP
  pool"). :meth:`OpenAIProvider.aclose` closes it.
* With a progress sink (and ``stream`` enabled) the request is streamed with
  ``stream_options.include_usage``; each chunk that adds output is reported.
  Without a sink the request is a plain JSON call.
* Retries are the ``openai`` client's own (``max_retries``): on connection
  errors, connect timeouts, 408, 409, 429 and 5xx, with exponential backoff
  from 0.5 s up to 8 s with jitter, honouring ``Retry-After``/``retry-after-ms``
  up to two minutes. A stream that breaks after it started is not retried,
  and neither is a read timeout: a backend that does not answer within
  ``timeout`` would not answer the next time either, so the call ends at once
  (our transport cancels the call; the ``openai`` client would retry).
  ``timeout`` bounds connecting and every read (the wait for each streamed
  chunk); the whole call is bounded by the plan's deadline (:mod:`providers._plan`).
* A reply or a streamed event that is not JSON (whatever its content type),
  and a stream with no choices, are failures that say so (where the JSON
  breaks, in bytes). A stream's events are read by ``httpx-sse``; it ends at
  ``data: [DONE]``, and what follows is read (for at most 0.1 s, as the client
  does) so the connection can serve the next call.
* Size: no body (or streamed event) is read beyond the call's
  ``max_reply_bytes`` (of the limits the plan passes to
  :meth:`OpenAIProvider.sample_within`), for the plain and the streamed call
  alike.
* Cancellation closes the HTTP request before it propagates (a streamed
  response is closed on the way out; cancelling a plain call aborts it).
* Every ``openai`` failure becomes a :class:`ProviderError` whose message names
  the provider, the base URL (no credentials) and the cause, with the backend's
  own message redacted. The key is never formatted into anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import aclosing
from typing import Any, cast
from urllib.parse import urlsplit

import httpx
import openai
import orjson

from host_receiver.protocol.types import CreateMessageResult, SamplingRequest
from host_receiver.sanitize import safe_logger

from .._contract import ModelInfo, ProgressSink, SamplingProgress, progress_tail
from .._limits import SamplingLimits
from ._calls import Call
from ._client import SdkBackend, event_data, http_client
from ._openai_json import StreamFold, completion_reply
from ._openai_wire import MaxTokensParam, Reply, build_request, make_result
from ._settings import DEFAULT_BASE_URL, HttpTransport

__all__ = ["DEFAULT_BASE_URL", "OpenAIProvider", "default_max_tokens_param"]

log = safe_logger("providers.openai")

#: What ``chat.completions.create`` passes: the API key as a bearer token (and no admin key).
_CHAT_OPTIONS: openai.RequestOptions = {"security": {"bearer_auth": True}}


def _options(call: Call) -> openai.RequestOptions:
    """The request options of a chat completion of ``call``: tagged with its headers."""
    options = _CHAT_OPTIONS.copy()
    options["headers"] = call.headers
    return options


def default_max_tokens_param(base_url: str) -> MaxTokensParam:
    """``max_completion_tokens`` for OpenAI and Azure OpenAI, ``max_tokens`` elsewhere.

    OpenAI's newer models refuse ``max_tokens``; many compatible servers only
    know ``max_tokens``.
    """
    host = (urlsplit(base_url).hostname or "").lower()
    if host == "api.openai.com" or host.endswith(".openai.azure.com"):
        return "max_completion_tokens"
    return "max_tokens"


class OpenAIProvider(SdkBackend):
    """A provider backed by an OpenAI-compatible chat-completions endpoint."""

    #: The vendor whose models hints such as ``gpt-*`` name (model choice).
    vendor = "openai"
    default_url = DEFAULT_BASE_URL

    def __init__(
        self,
        name: str,
        models: Sequence[ModelInfo],
        *,
        api_key: str,
        base_url: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 2,
        stream: bool = True,
        forward_metadata: bool = False,
        max_tokens_param: MaxTokensParam | None = None,
        default_headers: Mapping[str, str] | None = None,
        http_transport: HttpTransport = "lean",
    ) -> None:
        super().__init__(
            name,
            models,
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            stream=stream,
            forward_metadata=forward_metadata,
        )
        self.max_tokens_param = max_tokens_param or default_max_tokens_param(self.base_url)
        self.http_transport = http_transport
        self._client = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=self.base_url,
            timeout=timeout,
            max_retries=max_retries,
            default_headers=dict(default_headers or {}),
            # Newer openai releases are typed for httpx2 but take an httpx client too
            # ("legacy httpx"); 1.x takes only httpx. The project depends on httpx.
            http_client=cast(Any, http_client(self.base_url, http_transport, self._calls)),
        )
        # The client joins a relative path to its base URL on every call; this is the same URL, once.
        self._url = str(self._client.base_url).rstrip("/") + "/chat/completions"
        self._site = self._call_site(openai, openai.OpenAIError)

    async def aclose(self) -> None:
        await self._client.close()

    async def sample_within(
        self,
        params: SamplingRequest,
        model: ModelInfo,
        limits: SamplingLimits,
        progress: ProgressSink | None = None,
    ) -> CreateMessageResult:
        body = build_request(
            params,
            model.id,
            max_tokens_param=self.max_tokens_param,
            forward_metadata=self.forward_metadata,
        )
        log.debug("sampling %s via %s", model.id, self)
        if self.stream and progress is not None:
            sink = progress
            reply = await self._site.run(
                lambda call: self._streamed(body, sink, call), streamed=True, limits=limits
            )
        else:
            reply = await self._site.run(lambda call: self._plain(body, call), streamed=False, limits=limits)
        return make_result(reply, model.id, params.stop_sequences)

    async def _listing(self, call: Call) -> list[str]:
        """The ids the backend's models endpoint lists for this key."""
        return [model.id async for model in self._client.models.list(extra_headers=call.headers)]

    # --- calls -------------------------------------------------------------

    async def _plain(self, body: dict[str, Any], call: Call) -> Reply:
        response: httpx.Response = await self._client.post(
            self._url, body=body, cast_to=httpx.Response, options=_options(call)
        )
        return completion_reply(orjson.loads(response.content))

    async def _streamed(self, body: dict[str, Any], progress: ProgressSink, call: Call) -> Reply:
        fold = StreamFold()
        pieces = 0
        reported = (0, 0)
        response: httpx.Response = await self._client.post(
            self._url,
            body={**body, "stream": True, "stream_options": {"include_usage": True}},
            cast_to=httpx.Response,
            options=_options(call),
            stream=True,
        )
        try:
            async with aclosing(event_data(response, openai)) as events:
                async for data in events:
                    chunk = orjson.loads(data)
                    if isinstance(chunk, dict) and chunk.get("error"):
                        raise _stream_error(chunk["error"], response.request)
                    grew = fold.add(chunk)
                    if grew:
                        pieces += 1
                    count = fold.usage if fold.usage is not None else pieces
                    if (grew or fold.usage is not None) and (count, fold.characters) != reported:
                        reported = (count, fold.characters)
                        await progress(SamplingProgress(count, progress_tail(fold.parts), fold.characters))
        finally:
            await response.aclose()
        return fold.reply()


def _stream_error(error: object, request: httpx.Request) -> openai.APIError:
    """An error event, as the ``openai`` client's stream raises it."""
    message = error.get("message") if isinstance(error, dict) else None
    if not isinstance(message, str) or not message:
        message = "An error occurred during streaming"
    return openai.APIError(message, cast(Any, request), body=error)
