"""The HTTP client under every SDK-based provider: one behaviour for limits, timeouts and faults.

Every backend package (``openai``, ``anthropic``, ``google-genai``) takes an
HTTP client of ours, so what follows holds for all of them alike; nothing of
it is written per provider.

Rules:

* :func:`http_client` is the httpx client, an ordinary ``httpx.AsyncClient``
  on :func:`call_transport`: a :class:`~providers.backends._calls.CallTransport` (each
  call's size cap, a read timeout that ends the call, the bodies closed when
  it ends) around the pool. An ``http://`` or ``https://`` base URL has the
  connection pool of :mod:`host_receiver._net.pool` unless the environment
  configures a proxy for it or ``http_transport`` is ``"httpx"``; then httpx's
  own pool, with the same limits (1,000 connections, all kept alive for 5 s).
* :meth:`CallSite.run` runs one call: it opens the call in the provider's
  :class:`~providers.backends._calls.LiveCalls` with the limits the plan gave and the
  scope a read timeout cancels, and the provider tags the call's requests
  with its headers. Retries are the SDK's own, set by its public
  ``max_retries``.
* SDKs built on ``httpx2`` (``anthropic`` 2.x) get the same transport behind
  an ``httpx2`` client (:mod:`providers.backends._httpx2`).
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
import urllib.request
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, ClassVar, TypeVar
from urllib.parse import urlsplit

import anyio
import httpx
from httpx_sse import EventSource, SSEError

from host_receiver._net.pool import DEFAULT_LIMITS, lean_transport_for
from host_receiver.errors import ProviderError
from host_receiver.protocol.types import CreateMessageResult, SamplingRequest
from host_receiver.sanitize import safe_logger, safe_url

from .._contract import ModelInfo, ProgressSink
from .._limits import SamplingLimits
from ._calls import Call, CallTransport, LiveCalls, close_bodies
from ._redact import Redactor
from ._settings import HttpTransport

__all__ = [
    "CallSite",
    "SdkBackend",
    "attempts_note",
    "call_transport",
    "check_settings",
    "connection_failure",
    "event_data",
    "http_client",
    "json_where",
    "sdk_failure",
    "status_failure",
]

log = safe_logger("providers.client")


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


def http_client(base_url: str, transport: HttpTransport, calls: LiveCalls) -> httpx.AsyncClient:
    """The httpx client an SDK sends through: a plain one, on :func:`call_transport`."""
    return httpx.AsyncClient(transport=call_transport(base_url, transport, calls), follow_redirects=True)


def call_transport(base_url: str, transport: HttpTransport, calls: LiveCalls) -> CallTransport:
    """The transport under a provider's SDK: its calls' rules around the pool that sends.

    ``lean``: our pool (:mod:`host_receiver._net.pool`) where it serves ``base_url``, httpx's
    own otherwise; ``httpx``: httpx's own always. Both have the same limits. A client with a
    transport of its own ignores the proxy environment, so httpx's pool is given the proxy
    that the environment names for ``base_url``, chosen once.
    """
    inner = lean_transport_for(base_url) if transport == "lean" else None
    if inner is None:
        return CallTransport(
            httpx.AsyncHTTPTransport(limits=DEFAULT_LIMITS, proxy=_env_proxy(base_url)), calls
        )
    return CallTransport(inner, calls)


def _env_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``$HTTP_PROXY``, ``$HTTPS_PROXY``, ``$ALL_PROXY``),
    unless ``$NO_PROXY`` spares its host."""
    parts = urlsplit(url)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme.lower()) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return proxy


# --- one call, its stream and its failures ------------------------------------------------

_T = TypeVar("_T")
_DEFAULT_LIMITS = SamplingLimits()
#: How long the rest of a stream is read after ``[DONE]`` (the ``openai`` client's own drain time).
_DRAIN_SECONDS = 0.1


#: How a failure of an SDK reads: ``(exc, who, timeout, redactor, requests sent)`` -> the error shown.
Describe = Callable[[Exception, str, float, Redactor, int], ProviderError]


class SdkBackend(ABC):
    """What every SDK-based provider has alike: how it is built from an entry's settings, its name,
    its models, how it is named in messages, its model listing, and its ``sample``:
    :meth:`sample_within` the default limits (a call made without a plan).

    A backend's constructor calls ``super().__init__`` with the settings every backend takes
    (checked by :func:`check_settings`), then builds its SDK's client on :attr:`_calls` and
    its :class:`CallSite` with :meth:`_call_site`.
    """

    #: Where an entry without a base URL of its own sends requests (the vendor's URL).
    default_url: ClassVar[str]
    #: Where this provider's calls go (built by the backend's constructor with :meth:`_call_site`).
    _site: CallSite

    def __init__(
        self,
        name: str,
        models: Sequence[ModelInfo],
        *,
        api_key: str,
        base_url: str | None,
        timeout: float,
        max_retries: int,
        stream: bool,
        forward_metadata: bool,
    ) -> None:
        check_settings(name, api_key, models, timeout=timeout, max_retries=max_retries)
        self._name = name
        self._models = tuple(models)
        self.base_url = base_url or self.default_url
        self.timeout = timeout
        self.max_retries = max_retries
        self.stream = stream
        self.forward_metadata = forward_metadata
        #: The calls in flight, which the transport of the SDK's client finds each request's in.
        self._calls = LiveCalls()
        self._redactor = Redactor([api_key])

    def _call_site(
        self,
        sdk: ModuleType,
        errors: type[Exception] | tuple[type[Exception], ...],
        describe: Describe | None = None,
    ) -> CallSite:
        """Where this provider's calls go: ``sdk``, whose ``errors`` read as ``describe`` says."""
        return CallSite(sdk, errors, self.where(), self.timeout, self._redactor, self._calls, describe)

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

    async def list_models(self) -> list[str]:
        """The model ids the backend's API lists for this key (:meth:`_listing`), as one call."""
        return await self._site.run(self._listing, streamed=False)

    @abstractmethod
    async def _listing(self, call: Call) -> list[str]:
        """The model ids the API lists, its requests tagged with ``call.headers``."""

    async def sample(
        self, params: SamplingRequest, model: ModelInfo, progress: ProgressSink | None = None
    ) -> CreateMessageResult:
        return await self.sample_within(params, model, _DEFAULT_LIMITS, progress)

    @abstractmethod
    async def sample_within(
        self,
        params: SamplingRequest,
        model: ModelInfo,
        limits: SamplingLimits,
        progress: ProgressSink | None = None,
    ) -> CreateMessageResult:
        """Sample one message, reading no more than ``limits.max_reply_bytes`` of a reply or event."""


@dataclass(frozen=True)
class CallSite:
    """Where a provider's calls go: its SDK, its error classes, its name for messages, its live calls.

    ``describe`` says how a failure of ``errors`` reads; by default :func:`sdk_failure`'s
    words for a Stainless-generated SDK. ``calls`` is the table the provider's
    :class:`~providers.backends._calls.CallTransport` finds each request's call in.
    """

    sdk: ModuleType
    errors: type[Exception] | tuple[type[Exception], ...]
    who: str  # "provider 'name' (base URL)"
    timeout: float
    redactor: Redactor
    calls: LiveCalls
    describe: Describe | None = None

    async def run(
        self,
        call: Callable[[Call], Awaitable[_T]],
        *,
        streamed: bool,
        limits: SamplingLimits = _DEFAULT_LIMITS,
    ) -> _T:
        """Await ``call(it)``, ``it`` the call opened under ``limits`` (the defaults for a call
        that is not sampling: listing models) in the scope a read timeout
        cancels (``call`` tags its requests with ``it.headers``); every failure as a
        :class:`ProviderError`.

        Whatever ends the call (its result, a failure, a cancellation), the bodies it
        opened are closed then, with their connections.
        """
        failure: ProviderError | None = None
        with anyio.CancelScope() as scope, self.calls.opened(limits, scope) as it:
            try:
                return await call(it)
            except self.errors as exc:
                if self.describe is not None:
                    failure = self.describe(exc, self.who, self.timeout, self.redactor, it.requests)
                else:
                    failure = sdk_failure(self.sdk, exc, self.who, self.timeout, self.redactor)
            except ProviderError as exc:
                failure = ProviderError(f"{self.who}: {exc}")
            except json.JSONDecodeError as exc:
                what = "stream" if streamed else "reply"
                failure = ProviderError(f"{self.who}: the backend's {what} is not JSON ({json_where(exc)})")
            finally:
                await close_bodies(it)
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
