"""The Streamable HTTP transport (MCP 2025-11-25 and 2026-07-28), client side, on httpx.

(About 630 lines, one idea: the POST answers, the GET stream and their
resumption share one cursor and failure model.)

A request whose ``_meta`` carries a protocol version is a 2026-07-28
(modern) request: it is posted with the headers the binding mirrors from its
body (:mod:`host_receiver.transports._mirror`), and it is cancelled by
closing its answer stream (:meth:`abandon`). Modern servers mint no session,
have no GET stream and no resumption; the rules below that name them apply
to legacy (2025-11-25) connections.

Rules:

- Every message is its own POST to the endpoint, with
  ``Accept: application/json, text/event-stream``. A request's answer is a
  JSON body or an SSE stream (which may carry server requests and
  notifications before the response); notifications and responses get 202.
- ``send`` of a request returns once the server accepted it (a JSON answer is
  already delivered by then); an SSE answer is read by a task of the
  connection. An HTTP failure raises :class:`TransportError` from ``send``;
  one that happens after acceptance (the stream broke and could not be
  resumed) is delivered as an error response (-32000) to the waiting request.
- The ``Mcp-Session-Id`` the server sets (on the initialize response) is sent
  on every later request; ``MCP-Protocol-Version`` is sent once the MCP layer
  has called :meth:`set_protocol_version`.
- :meth:`open_listener` opens the standalone GET SSE stream, where servers send
  requests of their own (the Python SDK's task helpers do); 405 means the
  server offers none. The stream is reopened when the server closes it.
- Resumption: SSE event ids are tracked per stream; after a disconnect the
  client waits the server's ``retry:`` (default ``default_retry``) and GETs
  with ``Last-Event-ID``, up to ``max_reconnects`` attempts in a row that
  bring no new event.
- A 404 on a request that carried a session id means the server ended the
  session: :class:`SessionExpired`, from ``send`` and from ``receive`` (the
  session ends). A new connection is the only way on.
- Any other error status on a request POST whose body is a JSON-RPC error
  (modern servers answer 400 with -32022 and their kin, 404 with -32601) is
  that request's error response; without one, ``send`` raises
  :class:`HttpStatusError` with the status.
- Size: no JSON body and no SSE event is read beyond ``max_message_size``
  (64 MB by default, as on stdio; error bodies beyond 64 KiB); the rest is
  not buffered. An oversized message is judged by its head
  (:func:`~host_receiver.protocol.jsonrpc.oversized`): a server request
  gets -32700 with its id, and on a request's own answer (its JSON body or
  SSE stream) a message whose id cannot be read is taken as the answer to
  that request, which fails with the same error. The connection, and an SSE
  stream, go on.
- Closing cancels the streams and DELETEs the session (405 is fine).
- Custom headers and an ``httpx.Auth`` go on every request; a caller may pass
  its own ``httpx.AsyncClient`` (left open on exit).

Fixed caps (docs/limits.md): ``_INCOMING_BUFFER``, ``_CONCURRENT_POSTS``,
``_MAX_ERROR_BODY``, ``_STATUS_DETAIL``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import anyio
import httpx
from anyio.abc import TaskGroup, TaskStatus

from host_receiver._concurrency import background_task_group
from host_receiver.errors import (
    HttpStatusError,
    InvalidMessage,
    InvalidToolHeaders,
    RpcError,
    SessionExpired,
    TransportError,
)
from host_receiver.protocol._head import HEAD_LIMIT
from host_receiver.protocol.jsonrpc import (
    ErrorResponse,
    Message,
    Request,
    Response,
    decode_message,
    dumps_message,
    oversized,
)
from host_receiver.protocol.modern import PROTOCOL_VERSION_KEY
from host_receiver.protocol.types import RequestId
from host_receiver.sanitize import safe_logger, safe_text
from host_receiver.transports._mirror import HeaderPaths, param_headers, request_headers, tool_header_paths
from host_receiver.transports._sse import read_events
from host_receiver.transports.base import DEFAULT_MAX_MESSAGE_SIZE, MessageStream, Transport

__all__ = ["CONNECTION_CLOSED", "HttpTransport", "SessionExpired"]

logger = safe_logger(__name__)

#: Error code delivered to a request whose answer stream broke for good.
CONNECTION_CLOSED = -32000
_POST_ACCEPT = "application/json, text/event-stream"
_SSE = "text/event-stream"
_INCOMING_BUFFER = 64
#: Responses and notifications posted at once at most: a burst opens no more
#: connections than a small server's listen backlog holds.
_CONCURRENT_POSTS = 4
#: The most of an error status's body read for its JSON-RPC error.
_MAX_ERROR_BODY = 64 * 1024
#: The most of an error status's body quoted in :class:`HttpStatusError`.
_STATUS_DETAIL = 500
#: Connect and write limits; reads are unbounded (SSE streams idle; sessions time out requests).
DEFAULT_TIMEOUT = httpx.Timeout(30.0, read=None)


class HttpTransport(Transport):
    """Streamable HTTP to the MCP endpoint at ``url``.

    ``headers`` go on every request. ``auth`` and ``timeout`` configure the
    client this transport creates; a caller-supplied ``client`` brings its own.
    ``max_message_size`` bounds each JSON body and SSE event read (module rules).
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: httpx.Auth | None = None,
        client: httpx.AsyncClient | None = None,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        default_retry: float = 1.0,
        max_reconnects: int = 3,
        close_timeout: float = 5.0,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    ) -> None:
        if client is not None and auth is not None:
            raise ValueError("pass auth to your own httpx.AsyncClient, not to the transport")
        self.url = url
        self.headers = dict(headers or {})
        self.auth = auth
        self.client = client
        self.timeout = timeout
        self.default_retry = default_retry
        self.max_reconnects = max_reconnects
        self.close_timeout = close_timeout
        self.max_message_size = max(max_message_size, HEAD_LIMIT)

    def __repr__(self) -> str:
        return f"HttpTransport({self.url!r})"

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[MessageStream]:
        async with AsyncExitStack() as stack:
            client = self.client
            if client is None:
                client = httpx.AsyncClient(timeout=self.timeout, auth=self.auth, follow_redirects=True)
                await stack.enter_async_context(client)
            async with background_task_group() as tasks:
                stream = _HttpStream(self, client, tasks)
                try:
                    yield stream
                finally:
                    with anyio.CancelScope(shield=True):
                        await stream.end_session()


@dataclass
class _Cursor:
    """Where one SSE stream stands: last event id, the server's retry, events seen."""

    retry: float
    last_event_id: str = ""
    events: int = 0


class _HttpStream(MessageStream):
    def __init__(self, config: HttpTransport, client: httpx.AsyncClient, tasks: TaskGroup) -> None:
        self._config = config
        self._client = client
        self._tasks = tasks
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._failure: TransportError | None = None
        self._posts = anyio.CapacityLimiter(_CONCURRENT_POSTS)
        self._tool_headers: dict[str, HeaderPaths] = {}  # x-mcp-header paths, by tool name
        self._modern_posts: dict[RequestId, anyio.CancelScope] = {}  # cancelled by closing them
        self._incoming_in, self._incoming_out = anyio.create_memory_object_stream[Message | InvalidMessage](
            _INCOMING_BUFFER
        )

    # --- MessageStream -------------------------------------------------------

    async def send(self, message: Message) -> None:
        self._raise_failure()
        body = dumps_message(message)
        if isinstance(message, Request):
            await self._tasks.start(self._post_request, message, body)
        else:
            await self._post_one_way(body)

    def send_nowait(self, message: Message) -> None:
        """Post a response or a notification from a task of the stream's own.

        Posts start in the order of the calls and run side by side, at most
        ``_CONCURRENT_POSTS`` at once (each waits for its 202). A request
        cannot be sent so: its answer is routed by ``send``.
        """
        if isinstance(message, Request):
            raise anyio.WouldBlock
        self._raise_failure()
        body = dumps_message(message)
        try:
            self._tasks.start_soon(self._post_in_background, body)
        except RuntimeError:  # the stream's task group has ended
            raise TransportError(f"the connection to {self._config.url} is closed") from None

    async def receive(self) -> Message | InvalidMessage:
        try:
            return await self._incoming_out.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._raise_failure()
            raise anyio.EndOfStream from None

    def set_protocol_version(self, version: str) -> None:
        self.protocol_version = version

    async def open_listener(self) -> None:
        await self._tasks.start(self._listen)

    def abandon(self, request_id: RequestId) -> bool:
        """A modern request is cancelled by closing its answer stream; a legacy one is not."""
        scope = self._modern_posts.pop(request_id, None)
        if scope is None:
            return False
        scope.cancel()
        return True

    def accept_tools(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The tools whose ``x-mcp-header`` annotations are valid; the others are left out, with a warning."""
        accepted = []
        for tool in tools:
            name = tool.get("name")
            try:
                paths = tool_header_paths(tool)
            except InvalidToolHeaders as exc:
                logger.warning("left out tool %r of %s: %s", name, self._config.url, exc)
                continue
            if isinstance(name, str):
                if paths:
                    self._tool_headers[name] = paths
                else:
                    self._tool_headers.pop(name, None)
            accepted.append(tool)
        return accepted

    def silence_means_legacy(self) -> bool:
        """No: a legacy server answers a request it does not take with an error status."""
        return False

    # --- POST ------------------------------------------------------------------

    async def _post_one_way(self, body: bytes) -> None:
        """POST a notification or a response; the server answers 202.

        A short body of known length (the 202's, usually empty) is read to its
        end, so that the connection goes back to the pool for the next post;
        any other is left unread and its connection closed.
        """
        try:
            async with self._open("POST", body=body) as response:
                await self._check(response)
                if _short_body(response):
                    await response.aread()
        except httpx.HTTPError as exc:
            raise TransportError(f"POST to {self._config.url} failed: {exc or type(exc).__name__}") from exc

    async def _post_in_background(self, body: bytes) -> None:
        """``_post_one_way`` within ``close_timeout``, finished even while the connection closes."""
        with anyio.move_on_after(self._config.close_timeout, shield=True) as scope:
            try:
                async with self._posts:  # first come, first posted
                    await self._post_one_way(body)
            except TransportError as exc:
                logger.warning("%s", exc)
        if scope.cancelled_caught:
            logger.warning(
                "gave up posting a message to %s after %s s", self._config.url, self._config.close_timeout
            )

    async def _post_request(self, request: Request, body: bytes, *, task_status: TaskStatus[None]) -> None:
        """POST a request and deliver its answer, resuming a broken SSE answer.

        Until ``task_status.started()`` failures raise (from ``send``); after
        it they end as an error response to the request.
        """
        headers = self._mirrored(request)
        if headers is None:
            await self._answer_request(request, body, None, task_status=task_status)
            return
        abandoned = False
        with anyio.CancelScope() as scope:  # closing the answer stream is the cancellation
            self._modern_posts[request.id] = scope
            try:
                await self._answer_request(request, body, headers, task_status=task_status)
            except anyio.get_cancelled_exc_class():
                # Cancelled with its caller (still in send): abandon() will find it and say
                # the closed stream told the server, so no notifications/cancelled is sent.
                abandoned = not scope.cancel_called
                raise
            finally:
                if not abandoned:
                    self._modern_posts.pop(request.id, None)
        if scope.cancelled_caught:
            logger.debug("request %r abandoned: its answer stream was closed", request.id)

    def _mirrored(self, request: Request) -> dict[str, str] | None:
        """The binding's headers for a modern request; None for a legacy one."""
        params = request.params
        meta = params.get("_meta") if params is not None else None
        version = meta.get(PROTOCOL_VERSION_KEY) if type(meta) is dict else None
        if not isinstance(version, str):
            return None
        headers = request_headers(request.method, params, version)
        paths = self._tool_headers.get(params.get("name")) if request.method == "tools/call" else None  # type: ignore[union-attr,arg-type]
        if paths:
            arguments = params.get("arguments")  # type: ignore[union-attr]
            try:
                headers.update(param_headers(paths, arguments if isinstance(arguments, dict) else None))
            except InvalidToolHeaders as exc:
                raise TransportError(f"cannot send tools/call: {exc}") from None
        return headers

    async def _answer_request(
        self,
        request: Request,
        body: bytes,
        headers: dict[str, str] | None,
        *,
        task_status: TaskStatus[None],
    ) -> None:
        cursor = _Cursor(retry=self._config.default_retry)
        accepted = False
        try:
            async with self._open("POST", body=body, extra=headers) as response:
                if response.status_code >= 400:
                    await self._deliver_error(response, request.id)
                    task_status.started()
                    return
                await self._check(response)
                kind = _content_type(response)
                if kind == "application/json":
                    limit = self._config.max_message_size
                    body, whole = await _read_head(response, limit)
                    answer = _decode(body) if whole else _oversized(body, limit, request.id)
                    await self._deliver(answer)
                    if not _answers(answer, request.id):
                        await self._deliver(_closed(request.id, "the server answered something else"))
                    task_status.started()
                    return
                if kind != _SSE:
                    raise TransportError(
                        f"unexpected content type '{safe_text(kind, 100)}' in answer to a request"
                    )
                task_status.started()
                accepted = True
                if await self._read_events(response, cursor, answer_to=request.id):
                    return
        except httpx.HTTPError as exc:
            if not accepted:
                raise TransportError(f"POST to {self._config.url} failed: {exc}") from exc
            logger.debug("answer stream for request %r broke: %s", request.id, exc)
        except Exception:
            if not accepted:
                raise
            logger.exception("reading the answer to request %r failed", request.id)
        await self._resume(request.id, cursor)

    async def _resume(self, request_id: RequestId, cursor: _Cursor) -> None:
        """GET with Last-Event-ID until the answer to ``request_id`` arrives, or give up."""
        fruitless = 0
        while cursor.last_event_id and fruitless < self._config.max_reconnects:
            await anyio.sleep(cursor.retry)
            seen = cursor.events
            try:
                async with self._open("GET", last_event_id=cursor.last_event_id) as response:
                    await self._check(response)
                    if await self._read_events(response, cursor, answer_to=request_id):
                        return
            except httpx.HTTPError as exc:
                logger.debug("resuming the answer to %r failed: %s", request_id, exc)
            except Exception as exc:  # an HTTP error status, or a broken event stream
                logger.warning("cannot resume the answer to %r: %s", request_id, exc)
                break
            fruitless = 0 if cursor.events > seen else fruitless + 1
        await self._deliver(_closed(request_id, "the server's stream ended before the response"))

    # --- GET -----------------------------------------------------------------

    async def _listen(self, *, task_status: TaskStatus[None]) -> None:
        """Keep the standalone GET stream open for messages the server starts."""
        cursor = _Cursor(retry=self._config.default_retry)
        started = False
        fruitless = 0
        unreachable = 0  # attempts in a row that found nobody listening
        try:
            while fruitless < self._config.max_reconnects:
                seen = cursor.events
                try:
                    async with self._open("GET", last_event_id=cursor.last_event_id) as response:
                        if response.status_code == 405:
                            logger.info("%s offers no GET stream (405)", self._config.url)
                            break
                        await self._check(response)
                        if _content_type(response) != _SSE:
                            logger.warning(
                                "the GET answer from %s is not SSE; not listening", self._config.url
                            )
                            break
                        if not started:
                            task_status.started()
                            started = True
                        await self._read_events(response, cursor, answer_to=None)
                    unreachable = 0
                except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                    unreachable += 1
                    logger.debug("GET stream cannot connect: %s", exc)
                except httpx.HTTPError as exc:
                    unreachable = 0
                    logger.debug("GET stream broke: %s", exc)
                fruitless = 0 if cursor.events > seen else fruitless + 1
                if fruitless < self._config.max_reconnects:
                    await anyio.sleep(cursor.retry)
            else:
                if unreachable >= self._config.max_reconnects:
                    # Nobody answers at the endpoint any more: the server is gone, so the
                    # connection ends instead of waiting for messages that cannot come.
                    self._fail(TransportError(f"the server at {self._config.url} cannot be reached any more"))
                    return
                logger.warning("GET stream to %s is gone; server requests may not arrive", self._config.url)
        except SessionExpired:
            if not started:
                raise
            return
        except Exception as exc:  # an HTTP error status, or a broken event stream
            logger.warning("GET stream to %s failed: %s", self._config.url, exc)
        if not started:
            task_status.started()

    # --- shared ------------------------------------------------------------------

    def _open(
        self,
        method: str,
        *,
        body: bytes | None = None,
        last_event_id: str = "",
        extra: dict[str, str] | None = None,
    ) -> AbstractAsyncContextManager[httpx.Response]:
        headers = {**self._config.headers, "accept": _SSE if method == "GET" else _POST_ACCEPT}
        if body is not None:
            headers["content-type"] = "application/json"
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
        if self.protocol_version is not None:
            headers["mcp-protocol-version"] = self.protocol_version
        if last_event_id:
            headers["last-event-id"] = last_event_id
        if extra:
            headers.update(extra)
        return self._client.stream(method, self._endpoint, content=body, headers=headers)

    @cached_property
    def _endpoint(self) -> httpx.URL:
        """The endpoint, parsed once (httpx parses a string URL again for every request)."""
        return httpx.URL(self._config.url)

    async def _read_events(
        self, response: httpx.Response, cursor: _Cursor, *, answer_to: RequestId | None
    ) -> bool:
        """Deliver the messages of an SSE stream; True once ``answer_to`` is answered."""
        if _content_type(response) != _SSE:
            raise TransportError(f"expected an event stream from {self._config.url}")
        limit = self._config.max_message_size
        async for event in read_events(response.aiter_bytes(), limit):
            cursor.events += 1
            if event.id:
                cursor.last_event_id = event.id
            if event.retry is not None:
                cursor.retry = event.retry / 1000
            if event.event != "message" or event.data == "":
                continue  # the priming event: an id and no data
            data = event.data
            message = _decode(data) if data is not None else _oversized(event.head, limit, answer_to)
            await self._deliver(message)
            if answer_to is not None and _answers(message, answer_to):
                return True
        return False

    def _fail(self, failure: TransportError) -> None:
        """End the stream: ``receive`` drains what came before, then raises ``failure``."""
        if self._failure is None:
            self._failure = failure
            self._incoming_in.close()

    async def _check(self, response: httpx.Response, body: bytes | None = None) -> None:
        """Remember the session id; turn an HTTP error status into TransportError.

        ``body``: what of an error status's body was read already (it is quoted).
        """
        session_id = response.headers.get("mcp-session-id")
        if session_id and self.session_id is None:
            if all(0x21 <= ord(char) <= 0x7E for char in session_id):
                self.session_id = session_id
            else:
                logger.warning("ignored a session id with characters outside visible ASCII")
        status = response.status_code
        if status < 400:
            return
        sent_session = response.request.headers.get("mcp-session-id")
        if status == 404 and sent_session:
            self._fail(
                SessionExpired(
                    f"the server ended MCP session {sent_session} (HTTP 404); open a new connection"
                )
            )
            self._raise_failure()
        if body is None:
            body, _ = await _read_head(response, _STATUS_DETAIL)
        detail = safe_text(body[:_STATUS_DETAIL].decode(errors="replace"), _STATUS_DETAIL)
        raise HttpStatusError(f"HTTP {status} from {self._config.url}: {detail}", status)

    async def _deliver_error(self, response: httpx.Response, request_id: RequestId) -> None:
        """Deliver the JSON-RPC error an error status carries, as the answer to ``request_id``.

        When the body is no JSON-RPC error, or a 404 ends the legacy session,
        :meth:`_check` raises what happened instead.
        """
        body = None
        legacy_end = response.status_code == 404 and response.request.headers.get("mcp-session-id")
        if not legacy_end and _content_type(response) == "application/json":
            body, whole = await _read_head(response, _MAX_ERROR_BODY)
            answer = _decode(body) if whole else None
            if isinstance(answer, ErrorResponse):
                await self._deliver(ErrorResponse(request_id, answer.error))
                return
        await self._check(response, body)

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise type(self._failure)(str(self._failure))

    async def _deliver(self, message: Message | InvalidMessage) -> None:
        try:
            await self._incoming_in.send(message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            logger.debug("dropped a message that arrived after the stream closed")

    async def end_session(self) -> None:
        """Stop delivering, and DELETE the session if the server still has it."""
        self._incoming_in.close()
        if self.session_id is None or self._failure is not None:
            return
        with anyio.move_on_after(self._config.close_timeout):
            try:
                async with self._open("DELETE") as response:
                    logger.debug("DELETE of the session answered %d", response.status_code)
            except httpx.HTTPError as exc:
                logger.debug("DELETE of the session failed: %s", exc)


def _content_type(response: httpx.Response) -> str:
    content_type = str(response.headers.get("content-type", ""))
    return content_type.partition(";")[0].strip().lower()


def _short_body(response: httpx.Response) -> bool:
    length = response.headers.get("content-length", "")
    return length.isdigit() and int(length) <= _MAX_ERROR_BODY


def _decode(data: bytes | str) -> Message | InvalidMessage:
    try:
        return decode_message(data)
    except InvalidMessage as invalid:
        return invalid


async def _read_head(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """The body, and True; or, when it is longer than ``limit`` bytes, its first ``limit`` and False.

    What lies beyond the limit is not read: closing the response drops it.
    """
    body = bytearray()
    async for chunk in response.aiter_bytes():
        if len(body) + len(chunk) > limit:
            body += chunk[: limit - len(body)]
            return bytes(body), False
        body += chunk
    return bytes(body), True


def _oversized(head: bytes, limit: int, answer_to: RequestId | None) -> InvalidMessage:
    """A message over ``limit`` judged by its head; on the answer to ``answer_to``, one whose id
    cannot be read is taken as that answer (module rules)."""
    invalid = oversized(head, limit)
    if answer_to is None or invalid.request_id is not None:
        return invalid
    return InvalidMessage(invalid.code, invalid.message, request_id=answer_to, respond=False)


def _answers(message: Message | InvalidMessage, request_id: RequestId) -> bool:
    if isinstance(message, InvalidMessage):  # a broken answer fails the request it answered
        return not message.respond and message.request_id == request_id
    return isinstance(message, Response | ErrorResponse) and message.id == request_id


def _closed(request_id: RequestId, reason: str) -> ErrorResponse:
    return ErrorResponse(request_id, RpcError(CONNECTION_CLOSED, f"Connection closed: {reason}"))
