"""The Streamable HTTP transport (MCP 2025-11-25 and 2026-07-28), client side, on httpx.

This module posts; the parts are split by concern: what they share (the
client, the session id, the messages in, the failure) is
:mod:`~host_receiver.transports._http_exchange`, the legacy resumption of a
broken answer :mod:`~host_receiver.transports._http_resume`, the GET
stream :mod:`~host_receiver.transports._http_listen`.

The transport parses no MCP method. A request that comes with headers
(:attr:`Request.headers <host_receiver.protocol.jsonrpc.Request.headers>`,
which the connection layer fills for 2026-07-28 requests:
:mod:`host_receiver.client._mirror`) is a modern request: it is posted with them,
and it is cancelled by closing its answer stream (``Binding.abandon``).
Modern servers mint no session, have no GET stream and no resumption; the
rules below that name them apply to legacy (2025-11-25) connections. The
stream's binding (``stream.extra(StreamAttribute.binding)``) is how the MCP
layer reaches these; ``StreamAttribute.answers_every_request`` is True.

Rules:

- Every message is its own POST to the endpoint, with
  ``Accept: application/json, text/event-stream``. A request's answer is a
  JSON body or an SSE stream (which may carry server requests and
  notifications before the response); notifications and responses get 202.
- ``send`` of a request returns once the server accepted it (a JSON answer is
  already delivered by then); an SSE answer is read by a task of the
  connection. After the response the stream is read on to its end for at
  most ``_END_AFTER_ANSWER`` seconds (what follows the response is dropped),
  so that its connection goes back to the pool; one still open then is
  closed. An HTTP failure raises :class:`TransportError` from ``send``; one
  that happens after acceptance (the stream broke and could not be resumed)
  is delivered as an error response (-32000) to the waiting request.
- The ``Mcp-Session-Id`` the server sets (on the initialize response) is sent
  on every later request; ``MCP-Protocol-Version`` is sent once the MCP layer
  has told the binding the agreed version (``Binding.agree``).
- ``Binding.open_listener`` opens the standalone GET SSE stream, where servers send
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
- Closing (``aclose``, or leaving ``connect()``) stops sending and delivering
  and DELETEs the session once (405 is fine); leaving ``connect()`` cancels
  the streams.
- Custom headers and an ``httpx.Auth`` go on every request; a caller may pass
  its own ``httpx.AsyncClient`` (left open on exit). The client made here
  sends through the lean pool of :mod:`host_receiver._net.pool` when the URL
  is ``http`` or ``https`` with no proxy in front (certificates checked as
  httpx checks them), through httpx's own otherwise. With the lean pool and
  no ``auth``, requests go to the pool's ``handle_async_request`` directly,
  with the client's headers merged once per session shape and no cookie jar,
  until a response sets a cookie or redirects: from then on every request
  goes through the client (its jar, its redirects; the redirected request is
  sent again through it). With a challenge-driven ``auth``
  (:class:`host_receiver.auth.OAuth`), requests go through the client until
  one the auth left bare is answered, then directly, until a 401 or 403
  (sent again through the client, whose auth answers it) or a credential on
  a request hands the connection to the client for good.
- Every body is read inflated in bounded pieces (:mod:`host_receiver._net.body`):
  the size limits hold per byte of a compressed answer.

Fixed caps (docs/limits.md): ``_CONCURRENT_POSTS``; the others of the
HTTP stream are in :mod:`~host_receiver.transports._http_exchange`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import httpx
from anyio.abc import TaskGroup, TaskStatus

from host_receiver._concurrency import background_task_group
from host_receiver._net.body import MAX_ERROR_BODY
from host_receiver._net.pool import lean_transport_for
from host_receiver.errors import InvalidMessage, SessionExpired, TransportError
from host_receiver.protocol._head import HEAD_LIMIT
from host_receiver.protocol.jsonrpc import Message, Request, dumps_message
from host_receiver.protocol.types import RequestId
from host_receiver.sanitize import safe_logger, safe_text
from host_receiver.transports._http_exchange import (
    CONNECTION_CLOSED,
    SSE,
    Cursor,
    Exchange,
    answers,
    challenge_driven,
    closed,
    content_type,
    decode,
    oversized_answer,
    read_head,
)
from host_receiver.transports._http_listen import listen
from host_receiver.transports._http_resume import resume
from host_receiver.transports.base import (
    DEFAULT_MAX_MESSAGE_SIZE,
    Binding,
    MessageStream,
    StreamAttribute,
    Transport,
)

__all__ = ["CONNECTION_CLOSED", "HttpTransport", "SessionExpired"]

logger = safe_logger(__name__)

#: Responses and notifications posted at once at most: a burst opens no more
#: connections than a small server's listen backlog holds.
_CONCURRENT_POSTS = 4
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
            direct: httpx.AsyncBaseTransport | None = None
            if client is None:
                lean = lean_transport_for(self.url)
                client = httpx.AsyncClient(
                    transport=lean, timeout=self.timeout, auth=self.auth, follow_redirects=True
                )
                await stack.enter_async_context(client)
                if self.auth is None or challenge_driven(self.auth):
                    direct = lean  # requests skip the client while nothing needs it (Exchange)
            async with background_task_group() as tasks:
                stream = _HttpStream(self, client, tasks, direct, probe=self.auth is not None)
                try:
                    yield stream
                finally:
                    with anyio.CancelScope(shield=True):
                        await stream.aclose()


class _HttpStream(MessageStream):
    """Posting: every message its own POST; a request's answer delivered, or resumed."""

    def __init__(
        self,
        config: HttpTransport,
        client: httpx.AsyncClient,
        tasks: TaskGroup,
        direct: httpx.AsyncBaseTransport | None,
        *,
        probe: bool = False,
    ) -> None:
        self._config = config
        self._tasks = tasks
        self._exchange = Exchange(config, client, direct=direct, probe=probe)
        self._binding = _HttpBinding(self._exchange, tasks)
        # A free slot is taken without yielding: the post's task has just been scheduled.
        self._posts = anyio.Semaphore(_CONCURRENT_POSTS, fast_acquire=True)

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return {
            StreamAttribute.binding: lambda: self._binding,
            StreamAttribute.answers_every_request: lambda: True,
            StreamAttribute.network_transport: lambda: "tcp",
            StreamAttribute.url: lambda: self._config.url,
            StreamAttribute.session_id: lambda: self._exchange.session_id,
        }

    async def send(self, message: Message) -> None:
        self._exchange.check_open()
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
        self._exchange.check_open()
        body = dumps_message(message)
        try:
            self._tasks.start_soon(self._post_in_background, body)
        except RuntimeError:  # the stream's task group has ended
            raise TransportError(f"the connection to {self._config.url} is closed") from None

    async def receive(self) -> Message | InvalidMessage:
        try:
            return await self._exchange.incoming.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._exchange.raise_failure()
            raise anyio.EndOfStream from None

    async def aclose(self) -> None:
        """Stop delivering, and DELETE the session if the server still has it."""
        await self._exchange.end_session()

    async def _post_one_way(self, body: bytes) -> None:
        """POST a notification or a response; the server answers 202.

        A short body of known length (the 202's, usually empty) is read to its
        end, so that the connection goes back to the pool for the next post;
        any other is left unread and its connection closed.
        """
        exchange = self._exchange
        try:
            async with exchange.open("POST", body=body) as response:
                await exchange.check(response)
                if _short_body(response):
                    await response.aread()
        except httpx.HTTPError as exc:
            raise post_failed(self._config.url, exc) from exc

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
        if request.headers is None:
            await self._answer_request(request, body, None, task_status=task_status)
            return
        modern_posts = self._binding.modern_posts
        abandoned = False
        with anyio.CancelScope() as scope:  # closing the answer stream is the cancellation
            modern_posts[request.id] = scope
            try:
                await self._answer_request(request, body, dict(request.headers), task_status=task_status)
            except anyio.get_cancelled_exc_class():
                # Cancelled with its caller (still in send): abandon() will find it and say
                # the closed stream told the server, so no notifications/cancelled is sent.
                abandoned = not scope.cancel_called
                raise
            finally:
                if not abandoned:
                    modern_posts.pop(request.id, None)
        if scope.cancelled_caught:
            logger.debug("request %r abandoned: its answer stream was closed", request.id)

    async def _answer_request(
        self,
        request: Request,
        body: bytes,
        headers: dict[str, str] | None,
        *,
        task_status: TaskStatus[None],
    ) -> None:
        exchange = self._exchange
        cursor = Cursor(retry=self._config.default_retry)
        accepted = False
        try:
            async with exchange.open("POST", body=body, extra=headers) as response:
                if response.status_code >= 400:
                    await exchange.deliver_error(response, request.id)
                    task_status.started()
                    return
                await exchange.check(response)
                kind = content_type(response)
                if kind == "application/json":
                    limit = self._config.max_message_size
                    body, whole = await read_head(response, limit)
                    answer = decode(body) if whole else oversized_answer(body, limit, request.id)
                    await exchange.deliver(answer)
                    if not answers(answer, request.id):
                        await exchange.deliver(closed(request.id, "the server answered something else"))
                    task_status.started()
                    return
                if kind != SSE:
                    raise TransportError(
                        f"unexpected content type '{safe_text(kind, 100)}' in answer to a request"
                    )
                task_status.started()
                accepted = True
                if await exchange.read_events(response, cursor, answer_to=request.id):
                    return
        except httpx.HTTPError as exc:
            if not accepted:
                raise post_failed(self._config.url, exc) from exc
            logger.debug("answer stream for request %r broke: %s", request.id, exc)
        except Exception:
            if not accepted:
                raise
            logger.exception("reading the answer to request %r failed", request.id)
        await resume(exchange, request.id, cursor)


class _HttpBinding(Binding):
    """The HTTP binding: the legacy version header, the GET stream, cancelling by closing."""

    mirrors_headers = True

    def __init__(self, exchange: Exchange, tasks: TaskGroup) -> None:
        self._exchange = exchange
        self._tasks = tasks
        #: The answer streams of modern requests in flight, by id: cancelled by closing them.
        self.modern_posts: dict[RequestId, anyio.CancelScope] = {}

    def agree(self, version: str) -> None:
        self._exchange.protocol_version = version

    async def open_listener(self) -> None:
        await self._tasks.start(listen, self._exchange)

    def abandon(self, request_id: RequestId) -> bool:
        """A modern request is cancelled by closing its answer stream; a legacy one is not."""
        scope = self.modern_posts.pop(request_id, None)
        if scope is None:
            return False
        scope.cancel()
        return True


def _short_body(response: httpx.Response) -> bool:
    length = response.headers.get("content-length", "")
    return length.isdigit() and int(length) <= MAX_ERROR_BODY


def post_failed(url: str, exc: httpx.HTTPError) -> TransportError:
    """The error of a POST that got no answer: the URL and httpx's reason (its class when it gives none)."""
    return TransportError(f"POST to {url} failed: {str(exc) or type(exc).__name__}")
