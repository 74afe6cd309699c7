"""What a provider call's HTTP requests obey, as an ``httpx`` transport: its limits, its timeout, its end.

Every SDK (``openai``, ``anthropic``, ``google-genai``) takes an ordinary
``httpx.AsyncClient(transport=...)`` (``anthropic`` 2.x an ``httpx2`` one
bridged to it, :mod:`providers.backends._httpx2`); the transport is a
:class:`CallTransport` around the pool that sends. What holds per call is
given as arguments, through the SDKs' public options only:

* A provider owns one :class:`LiveCalls` table. Each call it makes is
  opened there with its :class:`~providers.SamplingLimits` and the cancel
  scope it runs in (:meth:`LiveCalls.opened`), and tags its requests with
  the call's :data:`CALL_HEADER` through the SDK's per-request headers
  option (``options={"headers": ...}``, ``extra_headers``,
  ``HttpOptions(headers=...)``).
* :class:`CallTransport` finds the call by that header and strips it before
  the request is sent (no backend sees it). A request without one is sent
  under the default limits.
* A read timeout ends the whole call: the transport cancels the call's scope
  before the timeout goes back to the SDK, so its retry never starts (a
  backend that did not answer within ``timeout`` would not answer the next
  time either). Connect timeouts and other errors are left to its retries.
* Size: no body is read beyond the call's ``max_reply_bytes``, counted after
  decompression (:func:`host_receiver._net.body.decoded_stream`); for an event
  stream the bound is on each event. Past it the call fails with
  :class:`~host_receiver.errors.ReplyTooLong`.
* Every body a call opened is closed when the call ends (:func:`close_bodies`,
  from :meth:`providers.backends._client.CallSite.run`): an SDK that leaves a stream it
  stops reading to the garbage collector does not keep the backend writing.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

import anyio
import httpx

from host_receiver._net.body import decoded_stream
from host_receiver.errors import ReplyTooLong

from .._limits import SamplingLimits

__all__ = ["CALL_HEADER", "Call", "CallTransport", "LiveCalls", "close_bodies"]

#: The request header that names the call a request belongs to (stripped before sending).
CALL_HEADER = "x-host-receiver-call"
_DEFAULT_LIMITS = SamplingLimits()


class Call:
    """One provider call as its requests see it: its limits, its scope, what it sent and opened."""

    __slots__ = ("bodies", "headers", "limits", "requests", "scope")

    def __init__(self, limits: SamplingLimits, scope: anyio.CancelScope, tag: str) -> None:
        self.limits = limits
        self.scope = scope
        #: The headers that tag a request as this call's (given to the SDK per request).
        self.headers = {CALL_HEADER: tag}
        #: The requests sent, retries included.
        self.requests = 0
        self.bodies: list[_CappedBody] = []


class LiveCalls:
    """The calls of one provider in flight, by the value of their :data:`CALL_HEADER`."""

    def __init__(self) -> None:
        self._live: dict[str, Call] = {}
        self._ids = itertools.count()

    @contextmanager
    def opened(self, limits: SamplingLimits, scope: anyio.CancelScope) -> Iterator[Call]:
        """A call in the table while the block runs (its bodies are closed by :func:`close_bodies`)."""
        tag = str(next(self._ids))
        call = Call(limits, scope, tag)
        self._live[tag] = call
        try:
            yield call
        finally:
            del self._live[tag]

    def find(self, tag: str | None) -> Call | None:
        return None if tag is None else self._live.get(tag)


async def close_bodies(call: Call) -> None:
    """Close every body ``call`` opened (shielded: it runs while the call is being cancelled too)."""
    with anyio.CancelScope(shield=True):
        for body in call.bodies:
            await body.aclose()


class CallTransport(httpx.AsyncBaseTransport):
    """``inner`` (the pool that sends), with each request held to its call's rules (module docstring)."""

    def __init__(self, inner: httpx.AsyncBaseTransport, calls: LiveCalls) -> None:
        self.inner = inner
        self._calls = calls

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        tag = request.headers.pop(CALL_HEADER, None)
        call = self._calls.find(tag)
        if call is not None:
            call.requests += 1
        try:
            response = await self.inner.handle_async_request(request)
        except httpx.ReadTimeout:
            _timed_out(call)
            raise
        if tag is not None and response.is_redirect:  # httpx makes the next request of this one
            request.headers[CALL_HEADER] = tag
        response.request = request
        body = _CappedBody(response, call)
        if call is not None:
            call.bodies.append(body)
        # The pool's response goes on with the capped, decoded body in place of its own (one
        # response object per request, not two); its headers no longer describe the bytes given.
        headers = response.headers
        for name in _DECODED_AWAY:
            if name in headers:
                del headers[name]
        response.stream = body
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def _timed_out(call: Call | None) -> None:
    """A read timed out: the call ends here, before its SDK can retry it."""
    if call is not None:
        call.scope.cancel()


#: Headers that describe the body as sent, not as :class:`_CappedBody` gives it (decoded).
_DECODED_AWAY = frozenset({"content-encoding", "content-length"})
#: What ends a server-sent event, as the SDKs' decoders split them.
_EVENT_ENDS = (b"\r\n\r\n", b"\n\n", b"\r\r")


class _CappedBody(httpx.AsyncByteStream):
    """The decoded body of a response, ending the call once it passes the call's ``max_reply_bytes``.

    For an event stream the bytes of each event count, from the end of the last
    one; otherwise the whole body's. Past the cap: :class:`ReplyTooLong`.
    Iterating again goes on where the last iteration stopped (the ``openai``
    client drains a stream's rest after ``[DONE]``, so that its connection is
    kept). Closing it twice closes the response once.
    """

    def __init__(self, response: httpx.Response, call: Call | None) -> None:
        raw = response.stream
        if not isinstance(raw, httpx.AsyncByteStream):
            raise TypeError("only the body of an async response can be capped")
        self._raw = raw
        self._chunks = decoded_stream(raw, response.headers.get("content-encoding", ""), response.request)
        self._event_stream = response.headers.get("content-type", "").startswith("text/event-stream")
        self._call = call
        self._limits = _DEFAULT_LIMITS if call is None else call.limits
        self._size = 0  # of the body, or of the event being read
        self._tail = b""  # the last bytes before this chunk: an event end may straddle two chunks
        self._closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        cap = self._limits.max_reply_bytes
        try:
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
        except httpx.ReadTimeout:
            _timed_out(self._call)
            raise

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            await self._raw.aclose()
