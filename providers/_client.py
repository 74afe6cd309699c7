"""The HTTP client under every SDK-based provider: one behaviour for limits, timeouts and faults.

(About 470 lines, one idea: what an SDK's HTTP client does for a provider
call, from the request sent to the error shown.)

Every backend package (``openai``, ``anthropic``, ``google-genai``) takes an
HTTP client of ours, so what follows holds for all of them alike; nothing of
it is written per provider.

Rules:

* :func:`http_client` is the httpx client: an ``http://`` or ``https://`` base URL
  has the connection pool of :mod:`host_receiver._http_pool` unless the environment
  configures a proxy for it or ``http_transport`` is ``"httpx"``; then httpx's own
  pool, with the same limits (1,000 connections, all kept alive for 5 s).
* A read timeout ends the whole call (:class:`OneReadTimeout` cancels the
  scope in :data:`CALL`, which the provider sets around its call): an SDK
  would retry it, and a backend that did not answer within ``timeout`` would
  not answer the next time either.
* Size: no body is read beyond the call's ``max_reply_bytes``
  (:func:`providers._plan.call_limits`), counted after decompression; for an
  event stream the bound is on each event. Past it the response is closed and
  the call fails with :class:`~host_receiver.errors.ReplyTooLong`.
* SDKs built on ``httpx2`` (``anthropic`` 2.x) get the same client behind
  an ``httpx2`` one (:mod:`providers._httpx2`).
* :func:`sdk_failure` turns a failure of a Stainless-generated SDK (``openai``,
  ``anthropic``: the same error classes) into a :class:`ProviderError` naming
  the provider, the base URL (no credentials) and the cause: the HTTP status
  with its meaning and ``retry-after``, a reset, a timeout, the number of
  attempts; the backend's own message redacted. Another SDK (``google-genai``)
  gives its own :data:`Describe`, built on the same words
  (:func:`status_failure`, :func:`connection_failure`).

Fixed caps (docs/limits.md): ``_MESSAGE_LIMIT``, ``_DRAIN_SECONDS``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from http.cookiejar import CookieJar
from types import ModuleType
from typing import Any, TypeVar

import anyio
import httpx
from httpx_sse import EventSource, SSEError

from host_receiver._http_body import decoded
from host_receiver._http_pool import DEFAULT_LIMITS, lean_transport_for
from host_receiver.errors import ProviderError, ReplyTooLong
from host_receiver.sanitize import safe_logger, safe_url

from ._config import HttpTransport
from ._contract import ModelInfo
from ._plan import call_limits
from ._redact import Redactor

__all__ = [
    "CALL",
    "CallSite",
    "OneReadTimeout",
    "SdkBackend",
    "attempts_note",
    "check_settings",
    "connection_failure",
    "event_data",
    "http_client",
    "json_where",
    "sdk_failure",
    "status_failure",
]

log = safe_logger("providers.client")

#: The cancel scope of the call running in this task (see :class:`OneReadTimeout`).
CALL: ContextVar[anyio.CancelScope | None] = ContextVar("providers_http_call", default=None)


@dataclass
class Sent:
    """What the call running in this task sent: its requests (retries too), the responses it streamed."""

    requests: int = 0
    streams: list[httpx.Response] = field(default_factory=list)


#: What the call running in this task sent (its streams are closed when it ends: :meth:`CallSite.run`).
SENT: ContextVar[Sent | None] = ContextVar("providers_http_sent", default=None)


class _Cookies(httpx.Cookies):
    """httpx's cookie jar, which skips the jar's work for a response that sets no cookie.

    httpx hands every response to the jar, which wraps it and its request in
    ``urllib`` objects first: about 6 % of a provider call's CPU, for backends
    that set no cookies.
    """

    def extract_cookies(self, response: httpx.Response) -> None:
        if "set-cookie" in response.headers:
            super().extract_cookies(response)


class OneReadTimeout(httpx.AsyncClient):
    """An httpx client on which a read timeout ends the whole call, no body is read past the cap,
    and cookies cost nothing unless set.

    The ``openai`` client retries every timeout from inside its own loop; this
    cancels the scope of the call that is running (``CALL``) before the
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
        sent = SENT.get()
        if sent is not None:
            sent.requests += 1
        try:
            response = _capped(await super().send(request, stream=True, **kwargs))
            if stream and sent is not None:
                sent.streams.append(response)
            if not stream:
                try:
                    await response.aread()
                except BaseException:
                    await response.aclose()
                    raise
            return response
        except httpx.ReadTimeout:
            call = CALL.get()
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
        self._chunks = decoded(response)
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


def check_settings(
    name: str, api_key: str, models: Iterable[ModelInfo], *, timeout: float, max_retries: int
) -> None:
    """The ``ValueError`` every backend raises for an unusable construction (one rule for all)."""
    if not api_key:
        raise ValueError("api_key must not be empty")
    if timeout <= 0 or max_retries < 0:
        raise ValueError("timeout must be positive and max_retries not negative")
    for model in models:
        if model.provider != name:
            raise ValueError(f"model {model.id!r} belongs to provider {model.provider!r}")


def http_client(base_url: str, transport: HttpTransport = "lean") -> httpx.AsyncClient:
    """The httpx client under the ``openai`` client; a read timeout is not retried on either.

    ``lean``: our pool (:mod:`host_receiver._http_pool`) for an http(s) backend that no proxy
    stands in front of, httpx's own otherwise (httpx ignores proxy variables for a client
    with a custom transport). ``httpx``: httpx's own pool always. Both have the same limits.
    """
    lean = lean_transport_for(base_url) if transport == "lean" else None
    if lean is not None:
        return OneReadTimeout(transport=lean, follow_redirects=True)
    return OneReadTimeout(follow_redirects=True, limits=DEFAULT_LIMITS)


# --- one call, its stream and its failures ------------------------------------------------

_T = TypeVar("_T")
#: How long the rest of a stream is read after ``[DONE]`` (the ``openai`` client's own drain time).
_DRAIN_SECONDS = 0.1


#: How a failure of an SDK reads: ``(exc, who, timeout, redactor, requests sent)`` -> the error shown.
Describe = Callable[[Exception, str, float, Redactor, int], ProviderError]


class SdkBackend:
    """What every SDK-based provider has alike: its name, its models, how it is named in messages."""

    _name: str
    _models: tuple[ModelInfo, ...]
    base_url: str

    @property
    def name(self) -> str:
        return self._name

    def models(self) -> Sequence[ModelInfo]:
        return self._models

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self._name!r}, base_url={safe_url(self.base_url)!r})"

    def where(self) -> str:
        """How failures name this provider: its name and base URL (no credentials)."""
        return f"provider {self._name!r} ({safe_url(self.base_url)})"


@dataclass(frozen=True)
class CallSite:
    """Where a provider's calls go: its SDK, its error classes, its name for messages, its key.

    ``describe`` says how a failure of ``errors`` reads; by default :func:`sdk_failure`'s
    words for a Stainless-generated SDK.
    """

    sdk: ModuleType
    errors: type[Exception] | tuple[type[Exception], ...]
    who: str  # "provider 'name' (base URL)"
    timeout: float
    redactor: Redactor
    describe: Describe | None = None

    async def run(self, call: Awaitable[_T], *, streamed: bool) -> _T:
        """Await ``call`` in the scope a read timeout cancels; every failure as a :class:`ProviderError`.

        Whatever ends the call (its result, a failure, a cancellation), the responses it
        streamed are closed then, with their connections: an SDK that leaves a stream to
        the garbage collector when its reader stops does not keep the backend writing.
        """
        failure: ProviderError | None = None
        sent = Sent()
        with anyio.CancelScope() as scope:
            token, sending = CALL.set(scope), SENT.set(sent)
            try:
                return await call
            except self.errors as exc:
                if self.describe is not None:
                    failure = self.describe(exc, self.who, self.timeout, self.redactor, sent.requests)
                else:
                    failure = sdk_failure(self.sdk, exc, self.who, self.timeout, self.redactor)
            except ProviderError as exc:
                failure = ProviderError(f"{self.who}: {exc}")
            except json.JSONDecodeError as exc:
                what = "stream" if streamed else "reply"
                failure = ProviderError(f"{self.who}: the backend's {what} is not JSON ({json_where(exc)})")
            finally:
                CALL.reset(token)
                SENT.reset(sending)
                with anyio.CancelScope(shield=True):
                    for response in sent.streams:
                        await response.aclose()
        if failure is None:  # the read timed out: the call was cancelled before a retry
            failure = ProviderError(f"{self.who}: no response within {self.timeout:g} s (not retried)")
        log.debug("sampling failed: %s", failure)
        raise failure


async def event_data(response: Any, sdk: ModuleType) -> AsyncGenerator[str, None]:
    """The data of each event of a streamed response (up to ``[DONE]``, then the rest of the body).

    The events are read by ``httpx-sse`` (an ``httpx`` or ``httpx2`` response); a
    body that is not ``text/event-stream`` is a :class:`ProviderError`, and a
    transport failure is ``sdk``'s error, as its own stream raises it.
    """
    timeouts, failures = _transport_errors()
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
    except timeouts as exc:
        raise sdk.APITimeoutError(request=response.request) from exc
    except failures as exc:
        raise sdk.APIConnectionError(request=response.request) from exc
    finally:
        await events.aclose()


def _transport_errors() -> tuple[tuple[type[Exception], ...], tuple[type[Exception], ...]]:
    """The timeout and request-error classes of httpx, and of httpx2 where it is installed."""
    timeouts: list[type[Exception]] = [httpx.TimeoutException]
    failures: list[type[Exception]] = [httpx.RequestError]
    try:
        import httpx2
    except ImportError:
        pass
    else:
        timeouts.append(httpx2.TimeoutException)
        failures.append(httpx2.RequestError)
    return tuple(timeouts), tuple(failures)


# --- failures --------------------------------------------------------------------------------

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
    529: "the backend is overloaded",
}


def sdk_failure(
    sdk: ModuleType, exc: Exception, who: str, timeout: float, redactor: Redactor
) -> ProviderError:
    """The :class:`ProviderError` for a failure of ``sdk`` (``openai`` or ``anthropic``)."""
    if isinstance(exc, sdk.APITimeoutError):
        return ProviderError(f"{who}: no response within {timeout:g} s{_attempts(exc)}")
    if isinstance(exc, sdk.APIConnectionError):
        return connection_failure(who, exc.__cause__, redactor, _attempts(exc))
    if isinstance(exc, sdk.APIStatusError):
        status: int = exc.status_code
        retried = _attempts(exc) if status in (408, 409, 429) or status >= 500 else ""
        return status_failure(who, status, server_message(exc.body), exc.response.headers, redactor, retried)
    if isinstance(exc, sdk.APIError):
        detail = redactor.text(exc.message, limit=_MESSAGE_LIMIT)
        return ProviderError(f"{who}: the backend reported an error: {detail}")
    return ProviderError(f"{who}: {type(exc).__name__}")


def connection_failure(
    who: str, cause: BaseException | None, redactor: Redactor, attempts: str = ""
) -> ProviderError:
    """A connection that failed (``cause``: the transport's exception), as every provider says it."""
    detail = redactor.text(str(cause), limit=_MESSAGE_LIMIT) if cause else ""
    what = "could not connect" if "Connect" in type(cause).__name__ else "connection failed"
    return ProviderError(f"{who}: {what}{': ' + detail if detail else ''}{attempts}")


def status_failure(
    who: str, status: int, message: str, headers: Any, redactor: Redactor, attempts: str = ""
) -> ProviderError:
    """An HTTP error status with the backend's ``message``, as every provider says it."""
    hint = _STATUS_HINTS.get(status, "server error" if status >= 500 else "request failed")
    detail = redactor.text(message, limit=_MESSAGE_LIMIT)
    after = _retry_after(headers)
    return ProviderError(
        f"{who}: HTTP {status}, {hint}{': ' + detail if detail else ''}{after}{attempts}", status=status
    )


def server_message(body: object) -> str:
    """The message of an error body (``{"error": {"message": ...}}`` and the like)."""
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return body if isinstance(body, str) else ""


def json_where(exc: json.JSONDecodeError) -> str:
    """Where JSON text broke, in bytes, and why (no content of the text)."""
    offset = len(exc.doc[: exc.pos].encode("utf-8", "replace"))
    return f"{exc.msg.lower()} at byte {offset}"


def _retry_after(headers: Any) -> str:
    """`` (retry after N s)`` when the backend said when to come back."""
    value = headers.get("retry-after") if headers is not None else None
    if not value:
        return ""
    try:
        seconds = float(value)
    except ValueError:
        return f" (retry after {str(value)[:40]})"
    return f" (retry after {seconds:g} s)"


def _attempts(exc: Any) -> str:
    """`` (after N attempts)`` when the client retried, from its retry-count header."""
    try:
        count = int(exc.request.headers.get("x-stainless-retry-count", "0")) + 1
    except (ValueError, RuntimeError, AttributeError):
        return ""
    return attempts_note(count)


def attempts_note(count: int) -> str:
    """`` (after N attempts)`` when a call was sent more than once."""
    return f" (after {count} attempts)" if count > 1 else ""
