"""The Anthropic provider, on the official ``anthropic`` package (``AsyncAnthropic``, the Messages API).

Rules:

* The wire mapping lives in :mod:`providers.backends._anthropic_wire`; this module does
  the I/O. The body is posted as it is with the client's ``post`` to
  ``/v1/messages`` (what ``messages.create`` does after converting its
  arguments, with the client's auth, ``anthropic-version`` header, retries
  and error classes), and the reply comes back as the raw HTTP response, read
  with orjson: the same path as the OpenAI provider, so that a reply or event
  that is not JSON is named at its byte.
* The API version is the SDK's (the ``anthropic-version`` of its client's
  public ``default_headers``) unless the entry pins one (``api_version``), which is then sent as the
  ``anthropic-version`` header; it decides whether ``temperature`` is sent
  (:func:`providers.backends._anthropic_wire.dropped_fields`).
* The client's HTTP is the transport of :mod:`providers.backends._calls` (the SDK is
  on ``httpx2``: through :mod:`providers.backends._httpx2`), each request tagged as its
  call's (``options={"headers": ...}``, ``extra_headers``): the pool,
  the size cap per reply and per streamed event, a read timeout that ends the
  call, and the failure messages are those of every provider. Retries are the
  SDK's (``max_retries``: connection errors, 408, 409, 429, 5xx and 529
  overloaded, honouring ``retry-after``).
* With a progress sink (and ``stream`` enabled) the request is streamed; each
  event that adds text or tool input is reported, with the backend's
  ``output_tokens`` once it gives them. An ``error`` event is the SDK's
  ``APIError``; a stream without ``message_start`` or cut before
  ``message_stop`` is a failure that says so.
* :meth:`AnthropicProvider.list_models` reads the models API (``/v1/models``),
  for ``providers add`` and ``providers test``.
* The base URL is the entry's, else ``$ANTHROPIC_BASE_URL``, else Anthropic's
  (decided in :mod:`providers.config._build`); the key is never formatted into anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import aclosing
from typing import Any

import anthropic
import httpx2
import orjson

from host_receiver.protocol.types import CreateMessageResult, SamplingRequest
from host_receiver.sanitize import safe_logger

from .._contract import ModelInfo, ProgressSink, SamplingProgress, progress_tail
from .._limits import SamplingLimits
from ._anthropic_wire import (
    MessageFold,
    MessageReply,
    build_request,
    dropped_fields,
    make_result,
    message_reply,
)
from ._calls import Call
from ._client import SdkBackend, event_data
from ._httpx2 import httpx2_client
from ._settings import DEFAULT_ANTHROPIC_URL, HttpTransport

__all__ = ["DEFAULT_ANTHROPIC_URL", "AnthropicProvider"]

log = safe_logger("providers.anthropic")

_PATH = "/v1/messages"


class AnthropicProvider(SdkBackend):
    """A provider backed by the Anthropic Messages API."""

    #: The vendor whose models hints such as ``claude-*`` name (model choice).
    vendor = "anthropic"
    default_url = DEFAULT_ANTHROPIC_URL

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
        api_version: str | None = None,
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
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=self.base_url,
            timeout=timeout,
            max_retries=max_retries,
            default_headers={"anthropic-version": api_version} if api_version else None,
            http_client=httpx2_client(self.base_url, http_transport, self._calls),
        )
        #: The API version sent: the entry's, else the SDK's own.
        self.api_version = str(self._client.default_headers["anthropic-version"])
        # The client joins a relative path to its base URL on every call; this is the same URL, once.
        self._url = str(self._client.base_url).rstrip("/") + _PATH
        self._site = self._call_site(anthropic, anthropic.AnthropicError)

    async def aclose(self) -> None:
        await self._client.close()

    def dropped(self, params: SamplingRequest) -> tuple[str, ...]:
        """The fields of ``params`` this provider leaves out (its API version does not take them)."""
        return dropped_fields(params, self.api_version)

    async def sample_within(
        self,
        params: SamplingRequest,
        model: ModelInfo,
        limits: SamplingLimits,
        progress: ProgressSink | None = None,
    ) -> CreateMessageResult:
        body = build_request(
            params, model.id, api_version=self.api_version, forward_metadata=self.forward_metadata
        )
        log.debug("sampling %s via %s", model.id, self)
        if self.stream and progress is not None:
            sink = progress
            reply = await self._site.run(
                lambda call: self._streamed(body, sink, call), streamed=True, limits=limits
            )
        else:
            reply = await self._site.run(lambda call: self._plain(body, call), streamed=False, limits=limits)
        return make_result(reply, model.id)

    async def _listing(self, call: Call) -> list[str]:
        """The ids the models API lists for this key, newest first (as the API orders them)."""
        pages = self._client.models.list(limit=1000, extra_headers=call.headers)
        return [model.id async for model in pages]

    # --- calls -------------------------------------------------------------

    async def _plain(self, body: dict[str, Any], call: Call) -> MessageReply:
        response = await self._client.post(
            self._url, body=body, cast_to=httpx2.Response, options={"headers": call.headers}
        )
        return message_reply(orjson.loads(response.content))

    async def _streamed(self, body: dict[str, Any], progress: ProgressSink, call: Call) -> MessageReply:
        fold = MessageFold()
        pieces = 0
        response = await self._client.post(
            self._url,
            body={**body, "stream": True},
            cast_to=httpx2.Response,
            options={"headers": call.headers},
            stream=True,
        )
        try:
            async with aclosing(event_data(response, anthropic)) as events:
                async for data in events:
                    event = orjson.loads(data)
                    if isinstance(event, dict) and event.get("type") == "error":
                        raise _stream_error(event.get("error"), response.request)
                    if fold.add(event):
                        pieces += 1
                        count = fold.usage if fold.usage is not None else pieces
                        await progress(SamplingProgress(count, progress_tail(fold.text), fold.characters))
        finally:
            await response.aclose()
        return fold.reply()


def _stream_error(error: object, request: httpx2.Request) -> anthropic.APIError:
    """An ``error`` event, as the SDK's stream raises it."""
    message = error.get("message") if isinstance(error, dict) else None
    if not isinstance(message, str) or not message:
        message = "An error occurred during streaming"
    kind = error.get("type") if isinstance(error, dict) else None
    if isinstance(kind, str) and kind:
        message = f"{kind}: {message}"
    return anthropic.APIError(message, request, body=error)
