"""The OpenAI-compatible provider, on the official ``openai`` client (``AsyncOpenAI``).

(About 550 lines, one idea: one call to one backend, from the posted body to
the mapped error; splitting streaming from plain replies would split that path.)

One provider entry is one backend (a base URL and a key): OpenAI itself, Azure
OpenAI's v1 endpoint, Ollama, vLLM, LM Studio, OpenRouter and the like.

Rules:

* The wire mapping lives in :mod:`providers._openai_wire` and the reading of
  replies in :mod:`providers._openai_json`; this module does the I/O, the
  streaming and the error mapping.
* The body built by ``_openai_wire`` is already in wire form, so it is posted
  as it is with the client's ``post`` (what ``chat.completions.create`` does
  after converting its arguments, with the same bearer auth) to the endpoint's
  full URL, made once, and the reply comes back as the raw HTTP response
  (``cast_to=httpx.Response``), read by :mod:`providers._openai_json` with
  orjson: the client's argument conversion, response models and stream
  decoder cost more CPU than the HTTP exchange. Its retries, error classes
  and auth apply unchanged: a failure while the body is read is the client's
  ``APITimeoutError`` or ``APIConnectionError``, and an error event in a
  stream its ``APIError``, as the client's own stream would raise them.
* The ``openai`` client gets an httpx client of ours (:class:`_OneReadTimeout`,
  with the environment's proxies): a plain ``http://`` base URL (the local
  backends, where a thousand calls run at once) has the connection pool of
  :mod:`providers._http` unless the environment configures an http proxy or
  ``http_transport`` is ``"httpx"``; other backends have httpx's own pool, with
  the same limits (1,000 connections, all kept alive for 5 s). httpx's pool
  walks every connection on every request, which costs milliseconds per call
  at a thousand connections (docs/performance.md, "The provider call and the
  HTTP pool").
  :meth:`OpenAIProvider.aclose` closes it.
* With a progress sink (and ``stream`` enabled) the request is streamed with
  ``stream_options.include_usage``; each chunk that adds output is reported.
  Without a sink the request is a plain JSON call.
* Retries are the ``openai`` client's own (``max_retries``): on connection
  errors, connect timeouts, 408, 409, 429 and 5xx, with exponential backoff
  from 0.5 s up to 8 s with jitter, honouring ``Retry-After``/``retry-after-ms``
  up to two minutes. A stream that breaks after it started is not retried,
  and neither is a read timeout: a backend that does not answer within
  ``timeout`` would not answer the next time either, so the call ends at once
  (our httpx client cancels the call; the ``openai`` client would retry).
  ``timeout`` bounds connecting and every read (the wait for each streamed
  chunk); the whole call is bounded by the plan's deadline (:mod:`providers._plan`).
* A reply or a streamed event that is not JSON (whatever its content type),
  and a stream with no choices, are failures that say so (where the JSON
  breaks, in bytes). A stream's events are read by ``httpx-sse``; it ends at
  ``data: [DONE]``, and what follows is read (for at most 0.1 s, as the client
  does) so the connection can serve the next call.
* Size: no body is read beyond the call's ``max_reply_bytes``
  (:func:`providers._plan.call_limits`; about 12 bytes per character of
  ``max_reply_chars`` plus 1 MiB), counted after decompression; for an event
  stream the bound is on each event. Past it the response is closed and the
  call fails with :class:`~providers.ReplyTooLong` ("over this host's size
  cap"), so a backend cannot make the host buffer a reply (or an error body)
  of any size before its characters are counted. This is done where our
  httpx client reads a response (:class:`_OneReadTimeout`), for the plain
  and the streamed call alike.
* Cancellation closes the HTTP request before it propagates (a streamed
  response is closed on the way out; cancelling a plain call aborts it).
* Every ``openai`` failure becomes a :class:`ProviderError` whose message names
  the provider, the base URL (no credentials) and the cause, with the backend's
  own message redacted. The key is never formatted into anything.

Fixed caps (docs/limits.md): ``_MESSAGE_LIMIT``, ``_DRAIN_SECONDS``.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from contextvars import ContextVar
from http.cookiejar import CookieJar
from typing import Any, cast
from urllib.parse import urlsplit

import anyio
import httpx
import openai
import orjson
from httpx_sse import EventSource, SSEError

from host_receiver.errors import ProviderError, ReplyTooLong
from host_receiver.protocol.types import CreateMessageResult, SamplingRequest
from host_receiver.sanitize import safe_logger, safe_url

from ._config import DEFAULT_BASE_URL, HttpTransport
from ._contract import (
    PROGRESS_TEXT_LIMIT,
    ModelInfo,
    ProgressSink,
    SamplingProgress,
    progress_text,
)
from ._http import DEFAULT_LIMITS, LeanTransport
from ._openai_json import StreamFold, completion_reply
from ._openai_wire import MaxTokensParam, Reply, build_request, make_result
from ._plan import call_limits
from ._redact import Redactor

__all__ = ["DEFAULT_BASE_URL", "OpenAIProvider", "default_max_tokens_param"]

log = safe_logger("providers.openai")

_MESSAGE_LIMIT = 300
_STATUS_HINTS = {
    400: "the request was rejected",
    401: "authentication failed; check the API key configured for this provider",
    403: "permission denied for this key",
    404: "not found; check the base URL and the model name",
    408: "the backend timed out",
    409: "conflict",
    413: "the request is too large",
    422: "the request was rejected",
    429: "rate limited",
}


#: What ``chat.completions.create`` passes: the API key as a bearer token (and no admin key).
_CHAT_OPTIONS: openai.RequestOptions = {"security": {"bearer_auth": True}}
#: How long the rest of a stream is read after ``[DONE]`` (the ``openai`` client's own drain time).
_DRAIN_SECONDS = 0.1


def default_max_tokens_param(base_url: str) -> MaxTokensParam:
    """``max_completion_tokens`` for OpenAI and Azure OpenAI, ``max_tokens`` elsewhere.

    OpenAI's newer models refuse ``max_tokens``; many compatible servers only
    know ``max_tokens``.
    """
    host = (urlsplit(base_url).hostname or "").lower()
    if host == "api.openai.com" or host.endswith(".openai.azure.com"):
        return "max_completion_tokens"
    return "max_tokens"


#: The cancel scope of the call running in this task (see :class:`_OneReadTimeout`).
_CALL: ContextVar[anyio.CancelScope | None] = ContextVar("providers_openai_call", default=None)


class _Cookies(httpx.Cookies):
    """httpx's cookie jar, which skips the jar's work for a response that sets no cookie.

    httpx hands every response to the jar, which wraps it and its request in
    ``urllib`` objects first: about 6 % of a provider call's CPU, for backends
    that set no cookies.
    """

    def extract_cookies(self, response: httpx.Response) -> None:
        if "set-cookie" in response.headers:
            super().extract_cookies(response)


class _OneReadTimeout(httpx.AsyncClient):
    """An httpx client on which a read timeout ends the whole call, no body is read past the cap,
    and cookies cost nothing unless set.

    The ``openai`` client retries every timeout from inside its own loop; this
    cancels the scope of the call that is running (``_CALL``) before the
    timeout goes back to it, so its retry never starts and the provider says
    the backend did not answer. Connect timeouts and other errors are left to
    its retries. Every response's body is read through :class:`_CappedBody`
    (the module's size rule); a body the caller did not ask to stream is read
    here, as httpx would.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._jar = _Cookies(kwargs.get("cookies"))

    def build_request(
        self,
        method: str,
        url: httpx.URL | str,
        *,
        content: Any = None,
        data: Any = None,
        files: Any = None,
        json: Any = None,
        params: Any = None,
        headers: Any = None,
        cookies: Any = None,
        timeout: Any = httpx.USE_CLIENT_DEFAULT,
        extensions: Any = None,
    ) -> httpx.Request:
        """httpx's own, made without its merging when there is nothing to merge.

        That is how the ``openai`` client calls it: an absolute URL, its headers as a
        list of pairs, a body, and no query, cookies, form, files or extensions. The
        client's default headers are merged here in one pass (a request header
        replaces the default of the same name, as in httpx); anything else goes
        through httpx. httpx's merging is about a fifth of the request building's CPU.
        """
        simple = data is None and files is None and json is None and not params and cookies is None
        if (
            simple
            and extensions is None
            and isinstance(url, str)
            and url.startswith(("http://", "https://"))  # absolute: httpx would not join it to base_url
            and isinstance(headers, list)
            and not self.params
            and not self._jar
        ):
            given = {name.lower().encode("latin-1") for name, _ in headers}
            merged: list[Any] = [(key, value) for key, value in self.headers.raw if key.lower() not in given]
            merged += headers
            chosen = self.timeout if timeout is httpx.USE_CLIENT_DEFAULT else httpx.Timeout(timeout)
            return httpx.Request(
                method, url, content=content, headers=merged, extensions={"timeout": chosen.as_dict()}
            )
        return super().build_request(
            method,
            url,
            content=content,
            data=data,
            files=files,
            json=json,
            params=params,
            headers=headers,
            cookies=cookies,
            timeout=timeout,
            extensions=extensions,
        )

    @property
    def cookies(self) -> httpx.Cookies:
        return self._jar

    @cookies.setter
    def cookies(
        self, cookies: httpx.Cookies | CookieJar | dict[str, str] | list[tuple[str, str]] | None
    ) -> None:
        self._jar = _Cookies(cookies)

    async def send(self, request: httpx.Request, *, stream: bool = False, **kwargs: Any) -> httpx.Response:
        try:
            response = _capped(await super().send(request, stream=True, **kwargs))
            if not stream:
                try:
                    await response.aread()
                except BaseException:
                    await response.aclose()
                    raise
            return response
        except httpx.ReadTimeout:
            call = _CALL.get()
            if call is not None:
                call.cancel()
            raise


def _capped(response: httpx.Response) -> httpx.Response:
    """``response`` with its decoded body read through :class:`_CappedBody`."""
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _DECODED_AWAY]
    event_stream = response.headers.get("content-type", "").startswith("text/event-stream")
    return httpx.Response(
        response.status_code,
        headers=headers,
        stream=_CappedBody(response, event_stream),
        request=response.request,
        extensions=response.extensions,
    )


#: Headers that describe the body as sent, not as :class:`_CappedBody` gives it (decoded).
_DECODED_AWAY = frozenset({"content-encoding", "content-length"})
#: What ends a server-sent event, as the ``openai`` client's decoder splits them.
_EVENT_ENDS = (b"\r\n\r\n", b"\n\n", b"\r\r")


class _CappedBody(httpx.AsyncByteStream):
    """The decoded body of a response, ending the call once it passes the call's ``max_reply_bytes``.

    For an event stream the bytes of each event count, from the end of the last
    one; otherwise the whole body's. Past the cap: :class:`ReplyTooLong`.
    Iterating again goes on where the last iteration stopped (the ``openai``
    client drains a stream's rest after ``[DONE]``, so that its connection is
    kept).
    """

    def __init__(self, response: httpx.Response, event_stream: bool) -> None:
        self._response = response
        self._chunks = response.aiter_bytes()
        self._event_stream = event_stream
        self._limits = call_limits()
        self._size = 0  # of the body, or of the event being read
        self._tail = b""  # the last bytes before this chunk: an event end may straddle two chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        cap = self._limits.max_reply_bytes
        async for chunk in self._chunks:
            if self._event_stream:
                window = self._tail + chunk
                ends = [at + len(mark) for mark in _EVENT_ENDS if (at := window.rfind(mark)) >= 0]
                self._size = len(window) - max(ends) if ends else self._size + len(chunk)
                self._tail = window[-3:]
            else:
                self._size += len(chunk)
            if self._size > cap:
                raise ReplyTooLong(self._limits.max_reply_chars, over_bytes=cap, event=self._event_stream)
            yield chunk

    async def aclose(self) -> None:
        await self._response.aclose()


def _http_client(base_url: str, transport: HttpTransport = "lean") -> httpx.AsyncClient:
    """The httpx client under the ``openai`` client; a read timeout is not retried on either.

    ``lean``: our pool (:mod:`providers._http`) for a plain-http backend that no proxy
    stands in front of, httpx's own otherwise (httpx ignores proxy variables for a client
    with a custom transport). ``httpx``: httpx's own pool always. Both have the same limits.
    """
    if transport == "lean" and urlsplit(base_url).scheme.lower() == "http":
        proxies = urllib.request.getproxies()
        if not (proxies.get("http") or proxies.get("all")):
            return _OneReadTimeout(transport=LeanTransport(limits=DEFAULT_LIMITS), follow_redirects=True)
    return _OneReadTimeout(follow_redirects=True, limits=DEFAULT_LIMITS)


class OpenAIProvider:
    """A provider backed by an OpenAI-compatible chat-completions endpoint."""

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
        if not api_key:
            raise ValueError("api_key must not be empty")
        if timeout <= 0 or max_retries < 0:
            raise ValueError("timeout must be positive and max_retries not negative")
        for model in models:
            if model.provider != name:
                raise ValueError(f"model {model.id!r} belongs to provider {model.provider!r}")
        self._name = name
        self._models = tuple(models)
        self.base_url = base_url or DEFAULT_BASE_URL
        self.timeout = timeout
        self.max_retries = max_retries
        self.stream = stream
        self.forward_metadata = forward_metadata
        self.max_tokens_param = max_tokens_param or default_max_tokens_param(self.base_url)
        self.http_transport = http_transport
        self._redactor = Redactor([api_key])
        self._client = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=self.base_url,
            timeout=timeout,
            max_retries=max_retries,
            default_headers=dict(default_headers or {}),
            # Newer openai releases are typed for httpx2 but take an httpx client too
            # ("legacy httpx"); 1.x takes only httpx. The project depends on httpx.
            http_client=cast(Any, _http_client(self.base_url, http_transport)),
        )
        # The client joins a relative path to its base URL on every call; this is the same URL, once.
        self._url = str(self._client.base_url).rstrip("/") + "/chat/completions"

    @property
    def name(self) -> str:
        return self._name

    def models(self) -> Sequence[ModelInfo]:
        return self._models

    def __repr__(self) -> str:
        return f"OpenAIProvider(name={self._name!r}, base_url={safe_url(self.base_url)!r})"

    async def aclose(self) -> None:
        await self._client.close()

    async def sample(
        self,
        params: SamplingRequest,
        model: ModelInfo,
        progress: ProgressSink | None = None,
    ) -> CreateMessageResult:
        body = build_request(
            params,
            model.id,
            max_tokens_param=self.max_tokens_param,
            forward_metadata=self.forward_metadata,
        )
        log.debug("sampling %s via %s", model.id, self)
        streamed = self.stream and progress is not None
        failure: ProviderError | None = None
        with anyio.CancelScope() as call:
            token = _CALL.set(call)
            try:
                if streamed:
                    assert progress is not None
                    reply = await self._streamed(body, progress)
                else:
                    reply = await self._plain(body)
                return make_result(reply, model.id, params.stop_sequences)
            except openai.OpenAIError as exc:
                failure = self._failure(exc)
            except ProviderError as exc:
                failure = ProviderError(f"{self._who()}: {exc}")
            except json.JSONDecodeError as exc:
                what = "stream" if streamed else "reply"
                failure = ProviderError(f"{self._who()}: the backend's {what} is not JSON ({_where(exc)})")
            finally:
                _CALL.reset(token)
        if failure is None:  # the read timed out: the call was cancelled before a retry
            failure = ProviderError(f"{self._who()}: no response within {self.timeout:g} s (not retried)")
        log.debug("sampling failed: %s", failure)
        raise failure

    # --- calls -------------------------------------------------------------

    async def _plain(self, body: dict[str, Any]) -> Reply:
        response: httpx.Response = await self._client.post(
            self._url, body=body, cast_to=httpx.Response, options=_CHAT_OPTIONS
        )
        return completion_reply(orjson.loads(response.content))

    async def _streamed(self, body: dict[str, Any], progress: ProgressSink) -> Reply:
        fold = StreamFold()
        pieces = 0
        reported = (0, 0)
        response: httpx.Response = await self._client.post(
            self._url,
            body={**body, "stream": True, "stream_options": {"include_usage": True}},
            cast_to=httpx.Response,
            options=_CHAT_OPTIONS,
            stream=True,
        )
        try:
            async with aclosing(_event_data(response)) as events:
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
                        await progress(SamplingProgress(count, _tail(fold.parts), fold.characters))
        finally:
            await response.aclose()
        return fold.reply()

    # --- failures ----------------------------------------------------------

    def _who(self) -> str:
        return f"provider {self._name!r} ({safe_url(self.base_url)})"

    def _failure(self, exc: openai.OpenAIError) -> ProviderError:
        who = self._who()
        if isinstance(exc, openai.APITimeoutError):
            return ProviderError(f"{who}: no response within {self.timeout:g} s{_attempts(exc)}")
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__
            detail = self._redactor.text(str(cause), limit=_MESSAGE_LIMIT) if cause else ""
            what = "could not connect" if "Connect" in type(cause).__name__ else "connection failed"
            return ProviderError(f"{who}: {what}{': ' + detail if detail else ''}{_attempts(exc)}")
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            hint = _STATUS_HINTS.get(status, "server error" if status >= 500 else "request failed")
            detail = self._redactor.text(_server_message(exc.body), limit=_MESSAGE_LIMIT)
            retried = _attempts(exc) if status in (408, 409, 429) or status >= 500 else ""
            text = f"{who}: HTTP {status}, {hint}{': ' + detail if detail else ''}{retried}"
            return ProviderError(text, status=status)
        if isinstance(exc, openai.APIError):
            detail = self._redactor.text(exc.message, limit=_MESSAGE_LIMIT)
            return ProviderError(f"{who}: the backend reported an error: {detail}")
        return ProviderError(f"{who}: {type(exc).__name__}")


async def _event_data(response: httpx.Response) -> AsyncGenerator[str, None]:
    """The data of each event of a streamed response up to ``[DONE]``, then the rest of the body.

    The events are read by ``httpx-sse``; a body that is not ``text/event-stream``
    is a :class:`ProviderError`, and a transport failure is the ``openai``
    client's error, as its own stream raises it.
    """
    events = EventSource(response).aiter_sse()
    try:
        async for event in events:
            if event.data.startswith("[DONE]"):
                with anyio.move_on_after(_DRAIN_SECONDS):  # the rest of the body, to keep the connection
                    async for _ in events:
                        pass
                return
            if event.data:
                yield event.data
    except SSEError as exc:
        raise ProviderError(f"the backend's stream is not an event stream ({exc})") from None
    except httpx.TimeoutException as exc:
        raise openai.APITimeoutError(request=cast(Any, response.request)) from exc
    except httpx.RequestError as exc:
        raise openai.APIConnectionError(request=cast(Any, response.request)) from exc
    finally:
        await events.aclose()


def _stream_error(error: object, request: httpx.Request) -> openai.APIError:
    """An error event, as the ``openai`` client's stream raises it."""
    message = error.get("message") if isinstance(error, dict) else None
    if not isinstance(message, str) or not message:
        message = "An error occurred during streaming"
    return openai.APIError(message, cast(Any, request), body=error)


def _server_message(body: object) -> str:
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return body if isinstance(body, str) else ""


def _where(exc: json.JSONDecodeError) -> str:
    """Where JSON text broke, in bytes, and why (no content of the text)."""
    offset = len(exc.doc[: exc.pos].encode("utf-8", "replace"))
    return f"{exc.msg.lower()} at byte {offset}"


def _attempts(exc: openai.APIError) -> str:
    """`` after N attempts`` when the client retried, from its retry-count header."""
    try:
        count = int(exc.request.headers.get("x-stainless-retry-count", "0")) + 1
    except (ValueError, RuntimeError):
        return ""
    return f" (after {count} attempts)" if count > 1 else ""


def _tail(parts: list[str]) -> str:
    """The generated text's tail, built without joining the whole text."""
    tail: list[str] = []
    size = 0
    for part in reversed(parts):
        tail.append(part)
        size += len(part)
        if size >= PROGRESS_TEXT_LIMIT:
            break
    return progress_text("".join(reversed(tail)))
