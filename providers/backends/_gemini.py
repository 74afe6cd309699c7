"""The Gemini provider, on the official ``google-genai`` package (``genai.Client``, ``generateContent``).

Rules:

* The wire mapping lives in :mod:`providers.backends._gemini_wire`; this module does
  the I/O, through the SDK's public calls (``models.generate_content``,
  ``models.generate_content_stream``, ``models.list``) on the Gemini API (never
  Vertex AI), with the key sent as the SDK sends it (``x-goog-api-key``).
* The SDK takes our HTTP client (``HttpOptions.httpx_async_client``), and
  each request is tagged as its call's (the request's ``HttpOptions.headers``):
  the pool, the size cap per reply and per streamed event, a read timeout
  that ends the call, are those of every provider (:mod:`providers.backends._calls`). The
  timeout is given to the SDK too (``HttpOptions.timeout``, in milliseconds),
  which passes it to each request; without it a request would have none.
* Retries are the SDK's (``HttpRetryOptions``: ``max_retries`` more attempts
  on 408, 429, 500, 502, 503, 504 and on connection errors, with exponential
  backoff; it does not read ``retry-after``, which the failure still names).
* Failures read as every provider's (:func:`gemini_failure`): the SDK's
  ``APIError`` is the HTTP status with the backend's message; the transport's
  own errors (the SDK passes httpx's on) are a reset, a refused connection or
  a timeout; a reply or event that is not JSON is named at its byte; after
  retries, the number of attempts (the requests the shared client sent).
* With a progress sink (and ``stream`` enabled) the request is streamed
  (``streamGenerateContent?alt=sse``); each chunk that adds text or a call is
  reported, with the backend's ``candidatesTokenCount`` once it gives it. A
  streamed answer that is not ``text/event-stream`` is a failure that says so
  (the SDK itself would read any body line by line).
* The base URL is the entry's, else ``$GOOGLE_GEMINI_BASE_URL``, else
  Google's (decided in :mod:`providers.config._build`); the API version is the
  entry's ``api_version``, else ``v1beta`` (the version whose reference
  describes function calling with ``parametersJsonSchema``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Sequence
from contextlib import aclosing
from typing import Any, cast

import httpx
import orjson
import pydantic
from google import genai
from google.genai import errors, types

from host_receiver.errors import ProviderError
from host_receiver.protocol.types import CreateMessageResult, SamplingRequest
from host_receiver.sanitize import safe_logger, safe_text

from .._contract import ModelInfo, ProgressSink, SamplingProgress, progress_tail
from .._limits import SamplingLimits
from ._calls import Call
from ._client import (
    SdkBackend,
    attempts_note,
    connection_failure,
    http_client,
    status_failure,
)
from ._gemini_wire import (
    WRONG_SHAPE,
    CallOptions,
    Contents,
    GeminiReply,
    build_config,
    build_contents,
    make_result,
    read_chunk,
    read_json,
)
from ._redact import Redactor
from ._settings import DEFAULT_GEMINI_URL, HttpTransport

__all__ = ["DEFAULT_API_VERSION", "DEFAULT_GEMINI_URL", "GeminiProvider", "gemini_failure"]

log = safe_logger("providers.gemini")

#: The API version used unless the entry names one.
DEFAULT_API_VERSION = "v1beta"


class GeminiProvider(SdkBackend):
    """A provider backed by the Gemini API."""

    #: The vendor whose models hints such as ``gemini-*`` name (model choice).
    vendor = "gemini"
    default_url = DEFAULT_GEMINI_URL

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
            forward_metadata=forward_metadata,  # the Gemini API has no field for it: never sent
        )
        self.api_version = api_version or DEFAULT_API_VERSION
        self._http = http_client(self.base_url, http_transport, self._calls)
        options = types.HttpOptions(
            base_url=self.base_url,
            api_version=self.api_version,
            timeout=max(1, round(timeout * 1000)),
            retry_options=types.HttpRetryOptions(attempts=max_retries + 1),
            httpx_async_client=self._http,
        )
        self._client = genai.Client(api_key=api_key, vertexai=False, http_options=options)
        self._site = self._call_site(genai, (errors.APIError, httpx.TransportError), gemini_failure)

    async def aclose(self) -> None:
        await self._client.aio.aclose()
        await self._http.aclose()

    def dropped(self, params: SamplingRequest) -> tuple[str, ...]:
        """The fields of ``params`` this provider leaves out that its entry meant to send:
        ``metadata``, when the entry forwards it (the Gemini API has no field for it)."""
        return ("metadata",) if self.forward_metadata and params.metadata else ()

    async def sample_within(
        self,
        params: SamplingRequest,
        model: ModelInfo,
        limits: SamplingLimits,
        progress: ProgressSink | None = None,
    ) -> CreateMessageResult:
        contents = build_contents(params)
        config = build_config(params)
        log.debug("sampling %s via %s", model.id, self)

        def tagged(call: Call, **update: object) -> types.GenerateContentConfig:
            options = CallOptions(headers=call.headers)
            return config.model_copy(update={"http_options": options, **update})

        if self.stream and progress is not None:
            sink = progress
            reply = await self._site.run(
                lambda call: _json_named(self._streamed(model.id, contents, tagged(call), sink)),
                streamed=True,
                limits=limits,
            )
        else:
            reply = await self._site.run(
                # The raw reply (``should_return_http_response``), read with orjson: the SDK's own
                # parsing into its types costs more than the rest of the reply's handling.
                lambda call: _json_named(
                    self._plain(model.id, contents, tagged(call, should_return_http_response=True))
                ),
                streamed=False,
                limits=limits,
            )
        return make_result(reply, model.id)

    async def _listing(self, call: Call) -> list[str]:
        """The ids of the models the API lists for this key that generate content."""
        config = types.ListModelsConfig(page_size=1000, http_options=types.HttpOptions(headers=call.headers))
        pager = await self._client.aio.models.list(config=config)
        return [
            (model.name or "").removeprefix("models/")
            async for model in pager
            if model.name
            and (model.supported_actions is None or "generateContent" in model.supported_actions)
        ]

    # --- calls -------------------------------------------------------------

    async def _plain(
        self, model: str, contents: Contents, config: types.GenerateContentConfig
    ) -> GeminiReply:
        answer = await self._client.aio.models.generate_content(model=model, contents=contents, config=config)
        body = answer.sdk_http_response.body if answer.sdk_http_response else None
        reply = GeminiReply()
        read_json(reply, orjson.loads(body or b"{}"))
        return reply

    async def _streamed(
        self,
        model: str,
        contents: Contents,
        config: types.GenerateContentConfig,
        progress: ProgressSink,
    ) -> GeminiReply:
        reply = GeminiReply()
        texts: list[str] = []
        characters = pieces = 0
        stream = await self._client.aio.models.generate_content_stream(
            model=model, contents=contents, config=config
        )
        async with aclosing(cast(Any, stream)) as chunks:
            checked = False
            events = aiter(cast(AsyncIterator[types.GenerateContentResponse], chunks))
            while True:
                try:
                    chunk = await anext(events)
                except StopAsyncIteration:
                    break
                except pydantic.ValidationError:  # the SDK's types refused the chunk
                    raise ProviderError(WRONG_SHAPE) from None
                if not checked:
                    _check_event_stream(chunk)
                    checked = True
                added, grown = read_chunk(reply, chunk)
                if not grown:
                    continue
                pieces += 1
                texts.append(added)
                characters += grown
                count = reply.tokens if reply.tokens is not None else pieces
                await progress(SamplingProgress(count, progress_tail(texts), characters))
        return reply


async def _json_named(call: Awaitable[GeminiReply]) -> GeminiReply:
    """``call``'s result; the SDK's "not JSON" error as the JSON error it wraps (named at its byte)."""
    try:
        return await call
    except errors.UnknownApiResponseError as exc:
        if isinstance(exc.__cause__, json.JSONDecodeError):
            raise exc.__cause__ from None
        raise ProviderError(WRONG_SHAPE) from None


def _check_event_stream(chunk: types.GenerateContentResponse) -> None:
    """A streamed answer must be an event stream: the SDK would read any body line by line."""
    headers = chunk.sdk_http_response.headers if chunk.sdk_http_response else None
    kind = (headers or {}).get("content-type", "")
    if not kind.startswith("text/event-stream"):
        shown = safe_text(kind, 60) or "absent"
        raise ProviderError(f"the backend's stream is not an event stream (its content type is {shown})")


#: The reason of Google's error details when the API key is not one it knows (with HTTP 400).
KEY_REJECTED = "API_KEY_INVALID"


def _reasons(details: object) -> set[str]:
    """The ``reason`` of each ``ErrorInfo`` in a Google error body's ``details``."""
    error = details.get("error") if isinstance(details, dict) else None
    listed = error.get("details") if isinstance(error, dict) else None
    if not isinstance(listed, list):
        return set()
    return {str(d["reason"]) for d in listed if isinstance(d, dict) and isinstance(d.get("reason"), str)}


def gemini_failure(
    exc: Exception, who: str, timeout: float, redactor: Redactor, requests: int
) -> ProviderError:
    """The :class:`ProviderError` for a failure of a ``google-genai`` call (``requests``: how many
    times it was sent, retries included)."""
    tries = attempts_note(requests)
    if isinstance(exc, errors.APIError):
        response = exc.response
        headers = response.headers if isinstance(response, httpx.Response) else None
        message = exc.message or ""
        if KEY_REJECTED in _reasons(exc.details):  # Google's 400 for a key it does not know
            message = f"{message} ({KEY_REJECTED}: the API key was rejected)".lstrip()
        return status_failure(who, exc.code, message, headers, redactor, tries)
    if isinstance(exc, httpx.TimeoutException):
        return ProviderError(f"{who}: no response within {timeout:g} s{tries}")
    return connection_failure(who, exc, redactor, tries)
