"""The MCP client side of one connection, in either protocol era: agreement, then traffic.

(About 530 lines, one idea: the connection's own state, its agreement and
receiver, decides how every call is sent; the agreement itself, the input
rounds and the server's tasks are their own modules.)

Rules:

- ``ClientConnection.connect()`` opens the transport and starts a session
  (live from the first byte: a server may ping early), then agrees on the
  era and version (:mod:`host_receiver._negotiation`: ``protocol="auto"``
  probes with ``server/discover`` and falls back to ``initialize``).
  A legacy agreement tells the stream the version, sends
  ``notifications/initialized`` and opens the stream's listener (the HTTP GET
  stream); a modern one needs none of these. Only then is the connection
  handed out.
- With a ``receiver`` (anything that offers ``capabilities(version)`` and
  ``attach(peer)``, such as :class:`~host_receiver.receiver.Receiver`), the
  connection advertises the receiver's capabilities, attaches itself as the
  receiver's :class:`~host_receiver.peer.Peer` for its whole life, routes the
  server's requests and notifications to the requestor it gets back, and
  fulfils modern input requests through it. Without one,
  ``request_handler``/``notification_handler`` serve them (or nothing does:
  -32601), and input requests cannot be answered.
- Modern requests carry the envelope in ``_meta`` (protocol version, client
  info, this request's capabilities: the receiver's, plus the tasks
  extension unless it is turned off). A -32022 answer to a request of an
  agreed connection is an :class:`UnsupportedProtocolVersion` naming both
  sides' versions (2026-07-28 is the only modern version: there is none to
  switch to; a new connection agrees afresh).
- ``call_tool``, ``get_prompt`` and ``read_resource`` follow a modern
  server's input rounds (:mod:`host_receiver._input_rounds`) and, for
  ``tools/call``, its tasks (:mod:`host_receiver._remote_tasks`), and return
  the final result only. A -32021 answer is a :class:`MissingCapability`
  naming what is missing. On HTTP, a -32020 answer to ``tools/call`` makes
  the connection list the tools again (their header annotations may have
  changed) and send the call once more.
- Leaving the context closes the session, then the transport.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from importlib import metadata
from typing import Any, Protocol, Self

import anyio

from host_receiver._input_rounds import with_input_rounds
from host_receiver._negotiation import AUTO, Agreement, agree, missing_capability, version_refused
from host_receiver._remote_tasks import TaskHandle, TaskObserver, follow_task
from host_receiver.errors import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    BadResult,
    ProtocolError,
    RpcError,
    method_not_found,
)
from host_receiver.peer import Peer
from host_receiver.protocol.modern import (
    HEADER_MISMATCH,
    MISSING_CAPABILITY,
    TASKS_EXTENSION,
    UNSUPPORTED_VERSION,
    RemoteTask,
    envelope,
    result_type,
)
from host_receiver.protocol.types import Implementation, dump
from host_receiver.protocol.versions import LATEST_LEGACY_VERSION, Era, rules_of
from host_receiver.sanitize import safe_id, safe_logger
from host_receiver.session import (
    IncomingRequest,
    NotificationHandler,
    ProgressCallback,
    RequestHandler,
    Session,
)
from host_receiver.transports.base import MessageStream, Transport

__all__ = [
    "ClientConnection",
    "RemoteTask",
    "ServerHandler",
    "ServesServers",
    "TaskHandle",
    "default_client_info",
]

logger = safe_logger(__name__)

#: Input rounds one request may take before the call is given up.
DEFAULT_MAX_INPUT_ROUNDS = 10
#: Seconds a legacy server may stay silent on ``server/discover`` before ``initialize``.
DEFAULT_DISCOVER_TIMEOUT = 10.0
#: Requests that may be answered with ``input_required`` (basic-patterns-mrtr.mdx).
_ROUND_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})


def default_client_info() -> Implementation:
    """``clientInfo`` naming this package and its installed version."""
    try:
        version = metadata.version("host-receiver")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare tree
        version = "0"
    return Implementation(name="host-receiver", version=version)


class ServerHandler(Protocol):
    """What serves one server's requests and notifications (a receiver's ``Requestor``)."""

    def dispatch(self, method: str, params: dict[str, Any] | None) -> Any:
        """The answer now (a dict), or an awaitable of it; raise RpcError for an error."""
        ...

    async def fulfil(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """Answer one input request of a modern server, never as a task."""
        ...

    async def handle_notification(self, method: str, params: dict[str, Any] | None) -> None: ...

    def cancel_tasks(self, message: str) -> int:
        """Cancel every live task of the server, answering its waiters (the connection is closing)."""
        ...


class ServesServers(Protocol):
    """What a connection needs of a receiver: its capabilities, and a scope per server."""

    def capabilities(self, protocol_version: str) -> dict[str, Any]: ...

    def attach(self, peer: Peer) -> AbstractAsyncContextManager[ServerHandler]: ...


class ClientConnection:
    """An MCP connection to one server (see :meth:`connect`), and that server's :class:`Peer`."""

    def __init__(
        self,
        stream: MessageStream,
        *,
        name: str,
        client_info: Implementation | None = None,
        capabilities: dict[str, Any] | None = None,
        receiver: ServesServers | None = None,
        request_handler: RequestHandler | None = None,
        notification_handler: NotificationHandler | None = None,
        max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
        tasks_extension: bool = True,
    ) -> None:
        if max_input_rounds < 1:
            raise ValueError("max_input_rounds must be at least 1")
        self._stream = stream
        self._client_info = client_info if client_info is not None else default_client_info()
        self._capabilities = capabilities
        self._receiver = receiver
        self._request_handler = request_handler
        self._notification_handler = notification_handler
        self.max_input_rounds = max_input_rounds
        self.tasks_extension = tasks_extension
        self._handler: ServerHandler | None = None  # the receiver's scope, once attached
        self._agreement: Agreement | None = None
        self._session = Session(
            stream,
            request_handler=self._on_request,
            notification_handler=self._on_notification,
            name=name,
        )

    @classmethod
    @asynccontextmanager
    async def connect(
        cls,
        transport: Transport,
        *,
        receiver: ServesServers | None = None,
        capabilities: dict[str, Any] | None = None,
        client_info: Implementation | None = None,
        request_handler: RequestHandler | None = None,
        notification_handler: NotificationHandler | None = None,
        name: str | None = None,
        protocol: str = AUTO,
        init_timeout: float | None = 60.0,
        discover_timeout: float | None = DEFAULT_DISCOVER_TIMEOUT,
        max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
        tasks_extension: bool = True,
    ) -> AsyncIterator[Self]:
        """Connect, agree on a protocol, and yield the connection.

        ``protocol`` is ``"auto"`` (dual-era), ``"2026-07-28"`` or
        ``"2025-11-25"``. ``receiver`` serves the server's requests (rules
        above); otherwise ``capabilities`` are advertised and the handlers
        serve them. ``name`` labels the server in logs (default: its
        ``serverInfo.name``). Raises :class:`UnsupportedProtocolVersion`,
        :class:`MissingCapability` or :class:`ProtocolError` for a failed
        agreement, ``RpcError`` if the server refuses ``initialize``,
        ``TimeoutError`` after ``init_timeout`` seconds.
        """
        if receiver is not None and (
            capabilities is not None or request_handler is not None or notification_handler is not None
        ):
            raise ValueError("with a receiver, capabilities and handlers come from the receiver")
        async with transport.connect() as stream, AsyncExitStack() as scope:
            connection = cls(
                stream,
                name=name or "server",
                client_info=client_info,
                capabilities=capabilities,
                receiver=receiver,
                request_handler=request_handler,
                notification_handler=notification_handler,
                max_input_rounds=max_input_rounds,
                tasks_extension=tasks_extension,
            )
            if receiver is not None:
                connection._handler = await scope.enter_async_context(receiver.attach(connection))
            session = await scope.enter_async_context(connection._session)
            agreement = await agree(
                session,
                protocol,
                capabilities_for=connection.capabilities_for,
                client_info=connection._client_info,
                discover_timeout=discover_timeout,
                init_timeout=init_timeout,
                silence_means_legacy=stream.silence_means_legacy(),
            )
            # Known before notifications/initialized: the server may send requests right after it.
            connection._agreement = agreement
            if name is None:
                session.name = agreement.server_info.name
            if agreement.era is Era.LEGACY:
                stream.set_protocol_version(agreement.version)
                await session.notify("notifications/initialized")
                await stream.open_listener()
            logger.info(
                "connected to %s %s (protocol %s, %s)",
                agreement.server_info.name,
                agreement.server_info.version,
                agreement.version,
                agreement.era.value,
            )
            yield connection

    # --- what the connection declares ------------------------------------------

    def capabilities_for(self, version: str) -> dict[str, Any]:
        """The client capabilities this connection declares when speaking ``version``."""
        if self._receiver is not None:
            capabilities = self._receiver.capabilities(version)
        else:
            capabilities = dict(self._capabilities or {})
        if self.tasks_extension and rules_of(version).era is Era.MODERN:
            extensions = dict(capabilities.get("extensions") or {})
            extensions[TASKS_EXTENSION] = {}
            capabilities = {**capabilities, "extensions": extensions}
        return capabilities

    # --- routing what the server sends ------------------------------------------

    def _on_request(self, request: IncomingRequest) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        if self._handler is not None:
            answer: dict[str, Any] | Awaitable[dict[str, Any]] = self._handler.dispatch(
                request.method, request.params
            )
            return answer
        if self._request_handler is not None:
            return self._request_handler(request)
        raise method_not_found(request.method)

    async def _on_notification(self, method: str, params: dict[str, Any] | None) -> None:
        if self._handler is not None:
            await self._handler.handle_notification(method, params)
        elif self._notification_handler is not None:
            await self._notification_handler(method, params)
        else:
            logger.debug("ignored notification %s", method)

    async def _fulfil(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """Answer one input request through the receiver; RpcError when it cannot be."""
        if self._handler is None:
            raise RpcError(METHOD_NOT_FOUND, f"this connection has no receiver to answer {method}")
        try:
            return await self._handler.fulfil(method, params)
        except RpcError:
            raise
        except Exception:
            logger.exception("answering %s for %s failed", method, self.name)
            raise RpcError(INTERNAL_ERROR, f"Internal error while serving {method}") from None

    # --- what the agreement established ------------------------------------

    @property
    def name(self) -> str:
        """The server's name in logs, prompts and the audit log."""
        return self._session.name

    @property
    def protocol_version(self) -> str:
        """The protocol version spoken (the newest handshake version, until the agreement)."""
        return self._agreement.version if self._agreement is not None else LATEST_LEGACY_VERSION

    @property
    def era(self) -> Era:
        """``Era.LEGACY`` (an ``initialize`` handshake) or ``Era.MODERN`` (per-request ``_meta``)."""
        return rules_of(self.protocol_version).era

    @property
    def server_info(self) -> Implementation:
        """The server's ``serverInfo``."""
        return self._agreed.server_info

    @property
    def server_capabilities(self) -> dict[str, Any]:
        """The server's ``capabilities``."""
        return self._agreed.server_capabilities

    @property
    def instructions(self) -> str | None:
        """The server's ``instructions``, if any."""
        return self._agreed.instructions

    @property
    def requestor(self) -> ServerHandler | None:
        """The receiver's scope for this server, when the connection has a receiver."""
        return self._handler

    @property
    def closed_reason(self) -> str | None:
        """Why the connection ended, in words (None while it is open)."""
        return self._session.closed_reason

    @property
    def _agreed(self) -> Agreement:
        if self._agreement is None:
            raise RuntimeError("the protocol agreement has not finished")
        return self._agreement

    @property
    def session(self) -> Session:
        """The JSON-RPC session underneath."""
        return self._session

    async def wind_down(self, reason: str) -> None:
        """Before closing: the server's live tasks are cancelled (each ``tasks/result`` gets that
        outcome) and every request still in flight is answered (:meth:`Session.finish`)."""
        if self._handler is not None:
            self._handler.cancel_tasks(f"The task was cancelled: {reason}.")
        await self._session.finish(reason)

    # --- traffic -------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> dict[str, Any]:
        """Send any request once and return its raw result (see :meth:`Session.request`).

        On a modern connection the envelope is added to ``_meta``. An
        ``input_required`` or task result comes back as it is: :meth:`call_tool`
        and its kin follow them; ``input_required`` to any other method is a
        :class:`BadResult`. A -32022 (the server no longer takes the agreed
        version: there is no other modern version to switch to) is an
        :class:`UnsupportedProtocolVersion`, a -32021 a :class:`MissingCapability`.
        """
        if self.era is Era.LEGACY:
            return await self._session.request(method, params, timeout=timeout, on_progress=on_progress)
        try:
            result = await self._session.request(
                method, self._stamped(params), timeout=timeout, on_progress=on_progress
            )
        except RpcError as exc:
            if exc.code == UNSUPPORTED_VERSION:
                raise version_refused(self.name, method, self.protocol_version, exc) from None
            if exc.code == MISSING_CAPABILITY:
                raise missing_capability(self.name, method, exc) from None
            raise
        if method not in _ROUND_METHODS and result.get("resultType") == "input_required":
            raise BadResult(
                f"{self.name} answered {method} with input_required, which only "
                f"{', '.join(sorted(_ROUND_METHODS))} may be answered with"
            )
        return result

    def _stamped(self, params: dict[str, Any] | None) -> dict[str, Any]:
        """``params`` with the modern envelope in ``_meta`` (the caller's other keys kept)."""
        version = self.protocol_version
        stamped = dict(params or {})
        meta = stamped.get("_meta")
        stamped["_meta"] = {
            **(meta if isinstance(meta, dict) else {}),
            **envelope(version, dump(self._client_info), self.capabilities_for(version)),
        }
        return stamped

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send any notification."""
        await self._session.notify(method, params)

    def notify_soon(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification without waiting; never raises (see :meth:`Session.notify_soon`)."""
        self._session.notify_soon(method, params)

    async def ping(self, *, timeout: float | None = None) -> None:
        """Check that the server answers (legacy connections: 2026-07-28 has no ping)."""
        await self._session.ping(timeout=timeout)

    async def list_tools(self, *, timeout: float | None = None) -> list[dict[str, Any]]:
        """Every tool the server offers, following ``nextCursor`` to the last page.

        ``timeout`` applies to each page. On HTTP, tools whose header
        annotations break the binding's rules are left out, with a warning.
        """
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            page = await self.request(
                "tools/list", {"cursor": cursor} if cursor is not None else None, timeout=timeout
            )
            items = page.get("tools")
            if not isinstance(items, list):
                raise ProtocolError("tools/list result has no tools array")
            tools.extend(self._stream.accept_tools([t for t in items if isinstance(t, dict)]))
            cursor = page.get("nextCursor")
            if cursor is None:
                return tools
            if not isinstance(cursor, str) or cursor in seen:
                raise ProtocolError(f"tools/list returned a bad or repeated cursor: {safe_id(cursor)}")
            seen.add(cursor)

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        on_task: TaskObserver | None = None,
    ) -> dict[str, Any]:
        """Call a tool and return its final ``CallToolResult``.

        A tool that failed is a result with ``isError: true``, not an
        exception. On a modern connection the server's input rounds are
        answered and its task (tasks extension) followed to its end;
        ``on_task`` is told every state of that task. ``timeout`` applies to
        each request sent.
        """
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        try:
            return await self._with_rounds("tools/call", params, timeout, on_progress, on_task)
        except RpcError as exc:
            if exc.code != HEADER_MISMATCH or self.era is Era.LEGACY:
                raise
            logger.info("%s refused the headers of tools/call %s; listing the tools again", self.name, name)
            await self.list_tools(timeout=timeout)
            return await self._with_rounds("tools/call", params, timeout, on_progress, on_task)

    @asynccontextmanager
    async def watch_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> AsyncIterator[TaskHandle]:
        """Call a tool as :meth:`call_tool` does, and yield a :class:`TaskHandle` to watch it.

            async with server.watch_tool("deploy", {"env": "prod"}) as call:
                async for task in call.updates():
                    show(task.status, task.status_message)
                result = await call.result()

        The call runs while the block does; leaving the block before it ends
        cancels it (the server's task gets ``tasks/cancel``).
        """

        def call(observer: TaskObserver) -> Awaitable[dict[str, Any]]:
            return self.call_tool(name, arguments, timeout=timeout, on_progress=on_progress, on_task=observer)

        handle = TaskHandle()
        async with anyio.create_task_group() as group:
            group.start_soon(handle._run, call)
            try:
                yield handle
            finally:
                handle.cancel()

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        """Get a prompt (answering a modern server's input rounds); returns ``GetPromptResult``."""
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return await self._with_rounds("prompts/get", params, timeout, None, None)

    async def read_resource(self, uri: str, *, timeout: float | None = None) -> dict[str, Any]:
        """Read a resource (answering a modern server's input rounds); returns ``ReadResourceResult``."""
        return await self._with_rounds("resources/read", {"uri": uri}, timeout, None, None)

    async def _with_rounds(
        self,
        method: str,
        params: dict[str, Any],
        timeout: float | None,
        on_progress: ProgressCallback | None,
        on_task: TaskObserver | None,
    ) -> dict[str, Any]:
        if self.era is Era.LEGACY:
            return await self.request(method, params, timeout=timeout, on_progress=on_progress)

        async def send(attempt: dict[str, Any]) -> dict[str, Any]:
            return await self.request(method, attempt, timeout=timeout, on_progress=on_progress)

        async def send_task_request(task_method: str, task_params: dict[str, Any]) -> dict[str, Any]:
            return await self.request(task_method, task_params, timeout=timeout)

        assert method in _ROUND_METHODS
        result = await with_input_rounds(method, params, send, self._fulfil, max_rounds=self.max_input_rounds)
        if result_type(result) != "task":
            return result
        if method != "tools/call" or not self.tasks_extension:
            raise BadResult(f"{self.name} answered {method} with a task, which this request did not allow")
        return await follow_task(result, send_task_request, self._fulfil, observer=on_task)

    async def wait_closed(self) -> None:
        """Return once the connection has ended (for instance, the server exited)."""
        await self._session.wait_closed()

    def __repr__(self) -> str:
        version = self._agreement.version if self._agreement is not None else "not agreed"
        return f"<{type(self).__name__} {self.name!r} {version}>"
