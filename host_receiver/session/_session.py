"""A JSON-RPC session: one peer, one message stream, traffic both ways.

(About 640 lines, one idea: both directions share the id space, the closing
and the stream, and splitting them would put the closing rules in two
places. Sending without waiting is its own module, :mod:`host_receiver.session._outbox`.)

The session owns request ids, matches responses to requests, dispatches what
the peer asks for, and implements the JSON-RPC level utilities MCP defines for
every connection: cancellation, progress and ping. It knows nothing of tasks,
sampling or elicitation: those are the request handler's business.

Rules:

- The request handler answers at once (returns a dict) or returns an
  awaitable, which runs in its own task: a handler that blocks for minutes
  never delays other traffic, and one that never waits costs no task. A
  handler's :class:`RpcError` becomes an error response; any other exception
  becomes -32603 "Internal error", logged with its traceback, its text never
  sent to the peer. After an answer given at once is sent, ``replied`` is
  called (for what need not delay the answer: the telemetry of the request).
- Every notification sent or received is shown to ``noticed`` first (the
  telemetry's span; what it returns is sent: ``params`` with the trace
  context in ``_meta``).
- The receive loop never waits on the peer: replies it makes (immediate
  answers, ping, errors for malformed frames) and :meth:`Session.notify_soon`
  go out through the session's :class:`~host_receiver.session._outbox.Outbox`, in
  order, without waiting.
- ``notifications/cancelled`` cancels the named in-flight handler, and its
  reply is then never sent. Naming none, it ends an outgoing request sent
  with ``peer_ends=True`` (a 2026-07-28 server ends a ``subscriptions/listen``
  so): the request raises :class:`ConnectionClosed` saying so.
- An outgoing request that times out or whose caller is cancelled is
  abandoned: the stream's binding may tell the peer itself
  (the 2026-07-28 HTTP binding closes the request's stream), else the session
  sends ``notifications/cancelled`` (never for ``initialize``, which MCP
  forbids cancelling).
- ``notifications/progress`` goes to the ``on_progress`` callback of the
  outgoing request whose token it names, in arrival order; every update that
  arrived before the response is delivered before ``request()`` returns.
- ``ping`` is answered ``{}`` by the session itself.
- Other notifications go to the notification handler one at a time, in
  arrival order (a handler must not wait for a response from this same peer:
  it would hold up the receive loop once the queue is full).
- A malformed frame is answered as :mod:`host_receiver.protocol.jsonrpc`
  decides (a request with its id, even one too long or not JSON, judged by
  its head); a malformed *response* whose id could be read fails the pending
  request it answers, with the parse error.
- Closing the session, or the peer ending its stream, fails pending outgoing
  requests with :class:`ConnectionClosed` and cancels in-flight handlers; a
  reply already computed is still written (within ``reply_grace`` seconds).
  The session never closes the stream: whoever opened it does.
- :meth:`Session.finish` is the polite way to close: handlers that can answer
  now (woken by whoever is closing) do, every request still in flight is then
  answered -32603 naming the reason (its handler cancelled), and only then
  may the session be closed. A request the peer cancelled is never answered.

Fixed caps (docs/limits.md): ``_PROGRESS_BUFFER``, ``_NOTIFICATION_BUFFER``,
``_ABANDONED_MEMORY``, ``_REASON_LIMIT``, ``_ERROR_MESSAGE_LIMIT``,
``_ERROR_DATA_LIMIT``.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, suppress
from types import TracebackType
from typing import Any, TypeAlias

import anyio
import orjson
from anyio.abc import TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from host_receiver._concurrency import background_task_group
from host_receiver.errors import (
    INTERNAL_ERROR,
    ConnectionClosed,
    InvalidMessage,
    RpcError,
    TransportError,
    method_not_found,
)
from host_receiver.protocol.jsonrpc import (
    ErrorResponse,
    Message,
    Notification,
    Request,
    Response,
    error_response,
    is_request_id,
)
from host_receiver.protocol.params import check_request_meta
from host_receiver.protocol.types import ProgressToken, RequestId
from host_receiver.sanitize import bounded, safe_id, safe_logger, safe_text
from host_receiver.session._outbox import Outbox
from host_receiver.telemetry import note_request_id
from host_receiver.transports.base import MessageStream, StreamAttribute

__all__ = [
    "IncomingRequest",
    "NotificationHandler",
    "ProgressCallback",
    "RequestHandler",
    "Session",
]

logger = safe_logger(__name__)

#: How many progress updates may wait for a slow ``on_progress``; more are dropped.
_PROGRESS_BUFFER = 64
#: How many notifications may wait for the notification handler.
_NOTIFICATION_BUFFER = 64
#: How many timed-out or cancelled request ids are remembered, to drop late answers quietly.
_ABANDONED_MEMORY = 256
#: The most characters of a peer's cancel reason that are logged.
_REASON_LIMIT = 200
#: Error replies: the longest ``message``, and the largest ``data`` (JSON bytes) sent whole.
_ERROR_MESSAGE_LIMIT = 1_024
_ERROR_DATA_LIMIT = 4_096


#: A request from the peer, as the request handler sees it: the decoded message
#: itself (``id``, ``method``, ``params``, ``meta``, ``progress_token``).
IncomingRequest: TypeAlias = Request


#: Returns the result now, or an awaitable of it; raises RpcError for an error response.
RequestHandler: TypeAlias = Callable[[IncomingRequest], dict[str, Any] | Awaitable[dict[str, Any]]]
NotificationHandler: TypeAlias = Callable[[str, dict[str, Any] | None], Awaitable[None]]
#: ``on_progress(progress, total, message)``.
ProgressCallback: TypeAlias = Callable[[float, float | None, str | None], Awaitable[None]]

_Progress: TypeAlias = tuple[float, float | None, str | None]
_Outcome: TypeAlias = dict[str, Any] | RpcError | ConnectionClosed
_Reply: TypeAlias = Response | ErrorResponse


async def _no_such_method(request: IncomingRequest) -> dict[str, Any]:
    raise method_not_found(request.method)


async def _ignore_notification(method: str, params: dict[str, Any] | None) -> None:
    logger.debug("ignored notification %s", method)


def _nothing() -> None:
    """The default ``replied``."""


#: ``noticed(method, params, sent)``: the params to send (``sent``), or None (received).
Noticed: TypeAlias = Callable[[str, dict[str, Any] | None, bool], dict[str, Any] | None]


def _as_is(method: str, params: dict[str, Any] | None, sent: bool) -> dict[str, Any] | None:
    """The default ``noticed``."""
    return params


class _Pending:
    """An outgoing request waiting for its response."""

    __slots__ = ("done", "outcome", "progress")

    def __init__(self, progress: MemoryObjectSendStream[_Progress] | None) -> None:
        self.done = anyio.Event()
        self.outcome: _Outcome | None = None
        self.progress = progress

    def settle(self, outcome: _Outcome) -> None:
        if self.done.is_set():
            return
        self.outcome = outcome
        self.done.set()
        if self.progress is not None:
            self.progress.close()


class Session:
    """JSON-RPC over one :class:`MessageStream`; use as ``async with Session(...)``.

    ``name`` labels the peer in log messages. ``reply_grace`` bounds how long
    closing waits for replies that were already computed.
    """

    def __init__(
        self,
        stream: MessageStream,
        *,
        request_handler: RequestHandler | None = None,
        notification_handler: NotificationHandler | None = None,
        name: str = "peer",
        reply_grace: float = 5.0,
        replied: Callable[[], None] | None = None,
        noticed: Noticed | None = None,
    ) -> None:
        self._name = name
        self._replied = replied or _nothing
        self._noticed = noticed or _as_is
        self.reply_grace = reply_grace
        self._stream = stream
        self._request_handler = request_handler or _no_such_method
        self._notification_handler = notification_handler or _ignore_notification
        self._ids = itertools.count(1)
        self._pending: dict[RequestId, _Pending] = {}
        self._abandoned: dict[RequestId, None] = {}
        self._in_flight: dict[RequestId, anyio.CancelScope] = {}
        self._peer_cancelled: set[RequestId] = set()
        self._peer_ends: set[RequestId] = set()  # outgoing requests the peer may end by cancelling them
        self._finishing: str | None = None  # why the in-flight requests are being answered
        self._outbox: Outbox | None = None  # made with the session's task group
        self._closed_reason: str | None = None
        self._closed = anyio.Event()
        self._notifications_in, self._notifications_out = anyio.create_memory_object_stream[
            tuple[str, dict[str, Any] | None]
        ](_NOTIFICATION_BUFFER)
        self._lifetime = AsyncExitStack()
        self._tasks: TaskGroup | None = None

    # --- lifetime --------------------------------------------------------

    async def __aenter__(self) -> Session:
        async with AsyncExitStack() as opening:
            group = await opening.enter_async_context(background_task_group())
            await group.start(self._run)
            self._lifetime = opening.pop_all()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._close("the session was closed")
        await self._lifetime.__aexit__(exc_type, exc, tb)

    @property
    def name(self) -> str:
        """The peer's name in log messages."""
        return self._name

    def rename(self, name: str) -> None:
        """Call the peer ``name`` from now on (a connection learns the server's name as it agrees)."""
        self._name = name

    @property
    def closed_reason(self) -> str | None:
        """Why the session ended, or None while it runs."""
        return self._closed_reason

    async def wait_closed(self) -> None:
        """Return once the session has ended (closed here or by the peer)."""
        await self._closed.wait()

    def _close(self, reason: str) -> None:
        if self._closed_reason is not None:
            return
        self._closed_reason = reason
        logger.debug("session with %s closing: %s", self.name, reason)
        for pending in self._pending.values():
            pending.settle(ConnectionClosed(f"connection to {self.name} closed: {reason}"))
        if self._outbox is not None:
            self._outbox.close()
        self._notifications_in.close()
        self._closed.set()

    async def _run(self, *, task_status: TaskStatus[None]) -> None:
        try:
            async with anyio.create_task_group() as tasks:
                self._tasks = tasks
                self._outbox = Outbox(self._stream, tasks, peer=self.name, grace=self.reply_grace)
                tasks.start_soon(self._dispatch_notifications)
                task_status.started()
                reason = await self._receive_loop()
                self._close(reason)
                tasks.cancel_scope.cancel()
        finally:
            self._close("the session was closed")

    # --- outgoing ----------------------------------------------------------

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        headers: Mapping[str, str] | None = None,
        sent_as: Callable[[RequestId], None] | None = None,
        peer_ends: bool = False,
    ) -> dict[str, Any]:
        """Send a request and return its result.

        ``headers`` travel with the request to the stream, outside the message
        (:attr:`Request.headers`: the HTTP binding's mirrored headers).
        ``sent_as`` is told the request's id before it is sent (a
        ``subscriptions/listen`` is known by it); ``peer_ends``: the peer may
        end it with ``notifications/cancelled``.
        Raises :class:`RpcError` for an error response, ``TimeoutError`` after
        ``timeout`` seconds, :class:`ConnectionClosed` if the session ends
        first, :class:`TransportError` if the message cannot be sent.
        """
        self._check_open()
        request_id = next(self._ids)
        note_request_id(request_id)
        if sent_as is not None:
            sent_as(request_id)
        progress_out: MemoryObjectReceiveStream[_Progress] | None = None
        progress_in: MemoryObjectSendStream[_Progress] | None = None
        if on_progress is not None:
            params = _with_progress_token(params, request_id)
            progress_in, progress_out = anyio.create_memory_object_stream[_Progress](_PROGRESS_BUFFER)
        pending = _Pending(progress_in)
        self._pending[request_id] = pending
        if peer_ends:
            self._peer_ends.add(request_id)
        try:
            with anyio.fail_after(timeout):
                await self._stream.send(Request(request_id, method, params, headers))
                if progress_out is None:
                    await pending.done.wait()
                else:
                    assert on_progress is not None
                    async with anyio.create_task_group() as group:
                        group.start_soon(self._deliver_progress, progress_out, on_progress)
                        await pending.done.wait()
        except (TimeoutError, anyio.get_cancelled_exc_class()) as exc:
            if not pending.done.is_set():
                self._abandon(request_id)
                binding = self._stream.extra(StreamAttribute.binding, None)
                told = binding is not None and binding.abandon(request_id)
                if not told and method != "initialize":
                    reason = "timed out" if isinstance(exc, TimeoutError) else "cancelled by the caller"
                    await self._send_cancellation(request_id, reason)
            raise
        finally:
            del self._pending[request_id]
            self._peer_ends.discard(request_id)
            if progress_in is not None:
                progress_in.close()
        outcome = pending.outcome
        if isinstance(outcome, dict):
            return outcome
        assert outcome is not None
        raise outcome

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification."""
        self._check_open()
        await self._stream.send(Notification(method, self._noticed(method, params, True)))

    def notify_soon(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification without waiting; never raises.

        Goes out before this returns when the stream can take it, else queues
        behind earlier ``notify_soon`` calls and replies. Dropped, with a debug
        log, once the session is closed.
        """
        if self._closed_reason is not None:
            logger.debug("%s not sent to %s: the session is closed", method, self.name)
            return
        self._send_soon(Notification(method, self._noticed(method, params, True)))

    async def ping(self, *, timeout: float | None = None) -> None:
        """Send ``ping`` and wait for the answer."""
        await self.request("ping", timeout=timeout)

    def _check_open(self) -> None:
        if self._closed_reason is not None:
            raise ConnectionClosed(f"connection to {self.name} closed: {self._closed_reason}")

    def _abandon(self, request_id: RequestId) -> None:
        """Remember that nobody waits for ``request_id`` any more (late answers are normal)."""
        self._abandoned[request_id] = None
        if len(self._abandoned) > _ABANDONED_MEMORY:
            del self._abandoned[next(iter(self._abandoned))]

    async def _send_cancellation(self, request_id: RequestId, reason: str) -> None:
        if self._closed_reason is not None:
            return
        method, params = "notifications/cancelled", {"requestId": request_id, "reason": reason}
        notice = Notification(method, self._noticed(method, params, True))
        with anyio.move_on_after(self.reply_grace, shield=True):
            try:
                await self._stream.send(notice)
            except (TransportError, anyio.ClosedResourceError, anyio.BrokenResourceError):
                logger.debug(
                    "could not tell %s that request %s was cancelled", self.name, safe_id(request_id)
                )

    async def _deliver_progress(
        self, updates: MemoryObjectReceiveStream[_Progress], on_progress: ProgressCallback
    ) -> None:
        async with updates:
            async for progress, total, message in updates:
                try:
                    await on_progress(progress, total, message)
                except Exception:
                    logger.exception("progress callback failed")

    # --- incoming ----------------------------------------------------------

    async def _receive_loop(self) -> str:
        """Read and route messages until the stream ends; return why it ended."""
        stream = self._stream
        while True:
            try:
                message = await stream.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                return f"{self.name} closed the connection"
            except TransportError as exc:
                logger.error("connection to %s failed: %s", self.name, exc)
                return str(exc)
            match message:
                case Request():
                    self._on_request(message)
                case Notification():
                    await self._on_notification(message)
                case Response() | ErrorResponse():
                    self._on_response(message)
                case InvalidMessage():
                    self._on_invalid(message)

    def _on_request(self, request: Request) -> None:
        if request.method == "ping":
            try:
                check_request_meta(request.params)
            except RpcError as exc:
                self._send_soon(ErrorResponse(request.id, exc))
                return
            self._send_soon(Response(request.id, {}))
            return
        if request.id in self._in_flight:
            logger.warning("%s reused request id %s while it was in flight", self.name, safe_id(request.id))
            return
        try:
            answer = self._request_handler(request)
        except Exception as exc:
            self._send_soon(self._error_reply(request, exc))
            return
        if type(answer) is dict:
            self._send_soon(Response(request.id, answer))
            self._replied()
            return
        scope = anyio.CancelScope()
        self._in_flight[request.id] = scope
        assert self._tasks is not None
        self._tasks.start_soon(self._handle_request, request, answer, scope)

    async def _handle_request(self, request: Request, answer: object, scope: anyio.CancelScope) -> None:
        reply: _Reply | None = None
        try:
            with scope:
                reply = await self._await_answer(request, answer)
        finally:
            self._in_flight.pop(request.id, None)
        if scope.cancel_called or reply is None:
            if self._finishing is not None and request.id not in self._peer_cancelled:
                message = f"Not answered: {self._finishing}"
                self._send_soon(ErrorResponse(request.id, RpcError(INTERNAL_ERROR, message)))
                return
            self._peer_cancelled.discard(request.id)
            logger.debug("request %s from %s was cancelled; no reply", safe_id(request.id), self.name)
            return
        self._send_soon(reply)

    async def finish(self, reason: str, *, settle: int = 5) -> int:
        """Answer every request in flight before closing (rules above); how many were cut short.

        First ``settle`` turns of the event loop let the handlers that were
        woken answer on their own; each one still running is then cancelled
        and answered -32603 ``Not answered: <reason>``.
        """
        for _ in range(settle):
            if not self._in_flight:
                break
            await anyio.lowlevel.checkpoint()
        self._finishing = reason
        scopes = [scope for rid, scope in self._in_flight.items() if rid not in self._peer_cancelled]
        for scope in scopes:
            scope.cancel()
        for _ in range(settle):  # the cancelled handlers write their answers
            if not self._in_flight:
                break
            await anyio.lowlevel.checkpoint()
        return len(scopes)

    async def _await_answer(self, request: Request, answer: object) -> _Reply:
        if not isinstance(answer, Awaitable):
            logger.error("handler for %s returned %s, not a dict", request.method, type(answer))
            return ErrorResponse(request.id, RpcError(INTERNAL_ERROR, "Internal error"))
        try:
            result = await answer
        except Exception as exc:
            return self._error_reply(request, exc)
        if type(result) is not dict:
            logger.error("handler for %s returned %s, not a dict", request.method, type(result))
            return ErrorResponse(request.id, RpcError(INTERNAL_ERROR, "Internal error"))
        return Response(request.id, result)

    def _error_reply(self, request: Request, exc: Exception) -> ErrorResponse:
        """The error response for a handler's exception (internal errors are logged, not told)."""
        only = exc if isinstance(exc, RpcError) else _sole_rpc_error(exc)
        if only is not None:
            return ErrorResponse(request.id, _bounded_error(only))
        logger.error("handler for %s (id %s) failed", request.method, safe_id(request.id), exc_info=exc)
        return ErrorResponse(request.id, RpcError(INTERNAL_ERROR, "Internal error"))

    async def _on_notification(self, notification: Notification) -> None:
        method, params = notification.method, notification.params
        self._noticed(method, params, False)
        if method == "notifications/cancelled":
            self._on_cancelled(params)
        elif method == "notifications/progress":
            self._on_progress(params)
        else:
            with suppress(anyio.ClosedResourceError):
                await self._notifications_in.send((method, params))

    async def _dispatch_notifications(self) -> None:
        async for method, params in self._notifications_out:
            try:
                await self._notification_handler(method, params)
            except Exception:
                logger.exception("notification handler failed for %s", method)

    def _on_cancelled(self, params: dict[str, Any] | None) -> None:
        request_id = params.get("requestId") if params else None
        if not is_request_id(request_id):
            logger.debug("%s sent notifications/cancelled without a usable requestId", self.name)
            return
        assert request_id is not None
        assert params is not None
        reason = safe_text(params.get("reason"), _REASON_LIMIT)
        scope = self._in_flight.get(request_id)
        if scope is None and request_id in self._peer_ends:
            self._pending[request_id].settle(
                ConnectionClosed(f"{self.name} ended request {safe_id(request_id)}: {reason}")
            )
            return
        if scope is None:
            logger.debug("%s cancelled request %s, which is not running", self.name, safe_id(request_id))
            return
        logger.info("%s cancelled request %s: %s", self.name, safe_id(request_id), reason)
        self._peer_cancelled.add(request_id)
        scope.cancel()

    def _on_progress(self, params: dict[str, Any] | None) -> None:
        params = params or {}
        token, progress = params.get("progressToken"), params.get("progress")
        total, message = params.get("total"), params.get("message")
        pending = self._pending.get(token) if is_request_id(token) else None  # type: ignore[arg-type]
        if pending is None or pending.progress is None:
            logger.debug("%s sent progress for unknown token %s", self.name, safe_id(token))
            return
        value, limit = _number(progress), _number(total)
        if value is None or (total is not None and limit is None):
            logger.debug("%s sent malformed progress for token %s", self.name, safe_id(token))
            return
        update: _Progress = (value, limit, message if isinstance(message, str) else None)
        try:
            pending.progress.send_nowait(update)
        except anyio.WouldBlock:
            logger.debug("progress update for %s dropped: the callback is behind", safe_id(token))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    def _on_response(self, response: Response | ErrorResponse) -> None:
        pending = self._pending.get(response.id) if response.id is not None else None
        if pending is None:
            if response.id in self._abandoned:
                del self._abandoned[response.id]
                logger.debug(
                    "late answer to abandoned request %s from %s dropped", safe_id(response.id), self.name
                )
            elif isinstance(response, ErrorResponse) and response.id is None:
                logger.warning("%s reported an error: %s", self.name, _describe_error(response.error))
            else:
                logger.warning("%s answered unknown request id %s; dropped", self.name, safe_id(response.id))
            return
        pending.settle(response.result if isinstance(response, Response) else response.error)

    def _send_soon(self, message: Message) -> None:
        assert self._outbox is not None
        self._outbox.send_soon(message)

    def _on_invalid(self, invalid: InvalidMessage) -> None:
        logger.warning("malformed message from %s: %s", self.name, invalid.message)
        if invalid.respond:
            self._send_soon(error_response(invalid))
        elif invalid.request_id is not None and (pending := self._pending.get(invalid.request_id)):
            # A broken answer to a request of ours: that request fails now rather than wait forever.
            pending.settle(RpcError(invalid.code, f"{self.name} sent an invalid response: {invalid.message}"))


def _with_progress_token(params: dict[str, Any] | None, token: ProgressToken) -> dict[str, Any]:
    """A copy of ``params`` with ``_meta.progressToken`` set."""
    params = dict(params or {})
    meta = params.get("_meta")
    params["_meta"] = {**(meta if isinstance(meta, dict) else {}), "progressToken": token}
    return params


def _number(value: object) -> float | None:
    """``value`` as a float if it is a JSON number, else None."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _bounded_error(error: RpcError) -> RpcError:
    """``error`` with its message cut and an oversized ``data`` left out: an error quotes the
    request it answers, and a reply must not grow with what the peer sent."""
    message = error.message
    data = error.data
    if data is not None and type(data) is not str:
        try:
            size = len(orjson.dumps(data))
        except TypeError:
            size = _ERROR_DATA_LIMIT + 1
        if size > _ERROR_DATA_LIMIT:
            data = None
    elif data is not None and len(data) > _ERROR_DATA_LIMIT:
        data = None
    if len(message) <= _ERROR_MESSAGE_LIMIT and data is error.data:
        return error
    return RpcError(error.code, bounded(message, _ERROR_MESSAGE_LIMIT), data)


def _describe_error(error: RpcError) -> str:
    return f"{error.code} {safe_text(error.message, _REASON_LIMIT)}"


def _sole_rpc_error(exc: BaseException) -> RpcError | None:
    """The RpcError inside an exception group of exactly one, as task groups make."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc if isinstance(exc, RpcError) else None
