"""The MCP client side of one connection, in either protocol era: agreement, then traffic.

(About 900 lines, one idea: the connection's own state, its agreement and
receiver, decides how every call is sent; the agreement itself, the input
rounds and the server's tasks are their own modules.)

Rules:

- ``ClientConnection.connect()`` opens the transport and starts a session
  (live from the first byte: a server may ping early), then agrees on the
  era and version (:mod:`host_receiver.client._negotiation`: ``protocol="auto"``
  probes with ``server/discover`` and falls back to ``initialize``).
  A legacy agreement tells the stream's binding the version, sends
  ``notifications/initialized`` and opens the binding's listener (the HTTP GET
  stream); a modern one needs none of these. Only then is the connection
  handed out.
- How it connects is one frozen :class:`~host_receiver.client.options.ConnectionOptions`
  (protocol, client info, round cap, tasks extension, the agreement's
  timeouts), given once.
- The connection talks to its stream through the stream's four methods
  and its typed attributes (``StreamAttribute``): the binding, and whether
  the medium answers every request. When the binding mirrors headers
  (HTTP), the connection keeps the mirroring map (:mod:`host_receiver.client._mirror`):
  each modern request carries its headers, and ``tools/list`` leaves out
  tools whose header annotations break the binding's rules. A ``tools/call``
  of a tool whose definition is not known lists the tools first (every page,
  once per connection; again after ``notifications/tools/list_changed`` or a
  -32020), and one of a tool left out is refused (:class:`InvalidToolHeaders`
  naming the annotation), so no call goes without its ``Mcp-Param-*``.
- One way to serve the server: a ``receiver`` (anything that offers
  ``capabilities(version)`` and ``attach(peer)``, such as
  :class:`~host_receiver.receiver.Receiver`). The connection advertises the
  receiver's capabilities, attaches itself as the receiver's
  :class:`~host_receiver.peer.Peer` for its whole life, routes the server's
  requests and notifications to the requestor it gets back, and fulfils
  modern input requests through it. Plain ``request_handler`` /
  ``notification_handler`` callbacks are such a receiver too
  (:class:`Callbacks`: unhandled requests are -32601, and input requests
  cannot be answered).
- Modern requests carry the envelope in ``_meta`` (protocol version, client
  info, this request's capabilities: the receiver's, plus the tasks
  extension unless it is turned off). A -32022 answer to a request of an
  agreed connection is an :class:`UnsupportedProtocolVersion` naming both
  sides' versions (2026-07-28 is the only modern version: there is none to
  switch to; a new connection agrees afresh).
- ``call_tool``, ``get_prompt`` and ``read_resource`` follow a modern
  server's input rounds (:mod:`host_receiver.client._input_rounds`) and, for
  ``tools/call``, its tasks (:mod:`host_receiver.client.remote_tasks._follow`), and return
  the final result only, as a typed model (:mod:`host_receiver.protocol.results`;
  one that breaks the schema is a :class:`BadResult` naming the field, and
  only that call fails). A -32021 answer is a :class:`MissingCapability`
  naming what is missing. On HTTP, a -32020 answer to ``tools/call`` makes
  the connection list the tools again (their header annotations may have
  changed) and send the call once more.
- On a legacy connection, ``call_tool`` task-augments the call when asked
  (``task=True``) or when the tool's ``execution.taskSupport`` is
  ``"required"`` (the definition comes from ``tools/list``, listed once and
  again after ``notifications/tools/list_changed``), never without the
  server's ``tasks.requests.tools.call`` or for a tool that forbids it, and
  follows the task (:func:`~host_receiver.client.remote_tasks._follow.follow_legacy_task`;
  the server's ``notifications/tasks/status`` about it go there).
- A modern server that advertises the tasks extension is sent
  ``subscriptions/listen`` for each task followed (:meth:`_listen`, one
  request held open); its acknowledgement and ``notifications/tasks`` go to
  the connection's :class:`~host_receiver.client.remote_tasks._follow.TaskNews`.
- Traces and metrics (:mod:`host_receiver.telemetry`, through ``options.telemetry``):
  every request sent is a CLIENT span whose context travels in ``_meta``
  (:meth:`request`, the one place requests are sent); every request received,
  pushed or an input round's, a SERVER span; a modern call with rounds or a
  task one span holding them; the connection's life one duration.
- Leaving the context closes the session, detaches from the receiver, then
  closes the transport. Everything the connection holds is given to its
  constructor; what it learns (the receiver's scope, the agreement) it sets
  itself while it opens.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, Self

import anyio

from host_receiver import telemetry
from host_receiver.client._input_rounds import with_input_rounds
from host_receiver.client._mirror import HeaderMirror
from host_receiver.client._negotiation import (
    Agreement,
    agree,
    lists_refused_version,
    missing_capability,
    version_refused,
)
from host_receiver.client.options import ConnectionOptions, default_client_info, options_from_keywords
from host_receiver.client.remote_tasks._follow import (
    TaskHandle,
    TaskNews,
    TaskObserver,
    birth,
    current_task,
    follow_legacy_task,
    follow_task,
)
from host_receiver.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    BadResult,
    ProtocolError,
    RemoteTaskLost,
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
    remote_task,
    result_type,
)
from host_receiver.protocol.results import (
    CallToolResult,
    GetPromptResult,
    ListedTool,
    ReadResourceResult,
    parse_result,
    parse_tools,
)
from host_receiver.protocol.types import Implementation, RequestId, dump
from host_receiver.protocol.versions import LATEST_LEGACY_VERSION, Era, rules_of
from host_receiver.remote_task_store import StoredTask, server_address
from host_receiver.sanitize import safe_id, safe_logger, safe_text
from host_receiver.session import (
    IncomingRequest,
    NotificationHandler,
    ProgressCallback,
    RequestHandler,
    Session,
)
from host_receiver.transports.base import MessageStream, StreamAttribute, Transport

__all__ = [
    "Callbacks",
    "ClientConnection",
    "RemoteTask",
    "ServerHandler",
    "ServesServers",
    "TaskHandle",
    "default_client_info",
]

logger = safe_logger(__name__)

#: Requests that may be answered with ``input_required`` (basic-patterns-mrtr.mdx).
_ROUND_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
#: A server's status notifications about its tasks: 2025-11-25's, and the tasks extension's.
_TASK_NEWS = frozenset({"notifications/tasks/status", "notifications/tasks"})


class ServerHandler(Protocol):
    """What serves one server's requests and notifications (a receiver's ``Requestor``)."""

    def answer(self, request: IncomingRequest) -> dict[str, Any] | Awaitable[dict[str, Any]]:
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


@dataclass(frozen=True)
class Callbacks:
    """Plain callbacks as a receiver: fixed ``capabilities``, a request and a notification handler.

    A request with no handler is -32601; a notification with none is
    ignored; a modern server's input request is -32601 (there is no
    receiver to answer it through).
    """

    declared: dict[str, Any] = field(default_factory=dict)
    request_handler: RequestHandler | None = None
    notification_handler: NotificationHandler | None = None

    def capabilities(self, protocol_version: str) -> dict[str, Any]:
        """The same capabilities in every version."""
        return dict(self.declared)

    @asynccontextmanager
    async def attach(self, peer: Peer) -> AsyncIterator[ServerHandler]:
        """The callbacks themselves serve every server."""
        yield self

    def answer(self, request: IncomingRequest) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        """The request handler's answer."""
        if self.request_handler is None:
            raise method_not_found(request.method)
        return self.request_handler(request)

    async def fulfil(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """Never: plain callbacks answer no input request."""
        raise RpcError(METHOD_NOT_FOUND, f"this connection has no receiver to answer {method}")

    async def handle_notification(self, method: str, params: dict[str, Any] | None) -> None:
        """The notification handler's business, or ignored."""
        if self.notification_handler is not None:
            await self.notification_handler(method, params)
        else:
            logger.debug("ignored notification %s", method)

    def cancel_tasks(self, message: str) -> int:
        """Callbacks keep no tasks."""
        return 0


class ClientConnection:
    """An MCP connection to one server (see :meth:`connect`), and that server's :class:`Peer`.

    Made by :meth:`connect`; ``receiver`` serves the server's requests,
    ``options`` say how to agree and how to follow rounds and tasks.
    """

    def __init__(
        self,
        stream: MessageStream,
        *,
        receiver: ServesServers,
        options: ConnectionOptions,
        name: str | None = None,
        known_version: str | None = None,
    ) -> None:
        self._stream = stream
        self._known_version = known_version  # what the server's origin agreed on before, if known
        self._binding = stream.extra(StreamAttribute.binding, None)
        self._mirror = HeaderMirror() if self._binding is not None and self._binding.mirrors_headers else None
        self._receiver = receiver
        self._options = options
        self._telemetry = options.telemetry or telemetry.default_telemetry()
        self._network = telemetry.network(
            stream.extra(StreamAttribute.network_transport, None), stream.extra(StreamAttribute.url, None)
        )
        self._facts_of: tuple[str, str | None, dict[str, Any]] | None = None  # _facts, as last made
        self._answered: telemetry.ServerCall | None = None  # answered at once, not yet recorded
        self._named = name is not None
        self._handler: ServerHandler | None = None  # the receiver's scope, once attached
        self._agreement: Agreement | None = None
        self._tools: dict[str, ListedTool] | None = None  # the last full tools/list, until it changes
        self._task_news = TaskNews()
        self._address: dict[str, Any] | None = None  # how to reach the server again (the task store's)
        self._session = Session(
            stream,
            request_handler=self._on_request,
            notification_handler=self._on_notification,
            name=name or "server",
            replied=self._replied,
            noticed=self._noticed,
        )

    @classmethod
    def connect(
        cls,
        transport: Transport,
        options: ConnectionOptions | None = None,
        *,
        receiver: ServesServers | None = None,
        capabilities: dict[str, Any] | None = None,
        request_handler: RequestHandler | None = None,
        notification_handler: NotificationHandler | None = None,
        name: str | None = None,
        **deprecated: Any,
    ) -> AbstractAsyncContextManager[Self]:
        """Connect, agree on a protocol, and yield the connection (``async with``).

        ``options`` (:class:`ConnectionOptions`) choose the protocol, the
        client info, the round cap, the tasks extension and the agreement's
        timeouts. ``receiver`` serves the server's requests (rules above);
        otherwise ``capabilities`` are advertised and the handlers serve them
        (:class:`Callbacks`). ``name`` labels the server in logs (default:
        its ``serverInfo.name``). Raises :class:`UnsupportedProtocolVersion`,
        :class:`MissingCapability` or :class:`ProtocolError` for a failed
        agreement, ``RpcError`` if the server refuses ``initialize``,
        ``TimeoutError`` after ``options.init_timeout`` seconds.
        """
        chosen = options_from_keywords(options, deprecated, "ClientConnection.connect")
        if receiver is None:
            receiver = Callbacks(capabilities or {}, request_handler, notification_handler)
        elif capabilities is not None or request_handler is not None or notification_handler is not None:
            raise ValueError("with a receiver, capabilities and handlers come from the receiver")
        return cls._connected(transport, receiver, chosen, name)

    @classmethod
    @asynccontextmanager
    async def _connected(
        cls,
        transport: Transport,
        receiver: ServesServers,
        options: ConnectionOptions,
        name: str | None,
        known_version: str | None = None,
    ) -> AsyncIterator[Self]:
        async with transport.connect() as stream:
            connection = cls(
                stream, receiver=receiver, options=options, name=name, known_version=known_version
            )
            connection._address = server_address(transport)
            async with connection._opened():
                yield connection

    @asynccontextmanager
    async def _opened(self) -> AsyncIterator[None]:
        """Attach to the receiver, start the session and agree; closes them on the way out."""
        opened = anyio.current_time()
        try:
            async with self._serving_session():
                yield
        finally:
            self._telemetry.session_ended(anyio.current_time() - opened, self._facts())

    @asynccontextmanager
    async def _serving_session(self) -> AsyncIterator[None]:
        async with self._receiver.attach(self) as handler, self._session as session:
            self._handler = handler
            # Known before notifications/initialized: the server may send requests right after it.
            self._agreement = agreement = await agree(
                session,
                self._options,
                capabilities_for=self.capabilities_for,
                silence_means_legacy=not self._stream.extra(StreamAttribute.answers_every_request, False),
                mirror=self._mirror,
                known_version=self._known_version,
                traced=lambda method, params: self._telemetry.client_call(method, params, self._facts()),
            )
            if not self._named:
                session.rename(agreement.server_info.name)
            binding = self._binding
            if agreement.era is Era.LEGACY:
                if binding is not None:
                    binding.agree(agreement.version)
                await session.notify("notifications/initialized")
                if binding is not None:
                    await binding.open_listener()
            logger.info(
                "connected to %s %s (protocol %s, %s)",
                agreement.server_info.name,
                agreement.server_info.version,
                agreement.version,
                agreement.era.value,
            )
            yield

    @property
    def options(self) -> ConnectionOptions:
        """How this connection was set up."""
        return self._options

    # --- what the connection declares ------------------------------------------

    def capabilities_for(self, version: str) -> dict[str, Any]:
        """The client capabilities this connection declares when speaking ``version``."""
        capabilities = self._receiver.capabilities(version)
        if self._options.tasks_extension and rules_of(version).era is Era.MODERN:
            extensions = dict(capabilities.get("extensions") or {})
            extensions[TASKS_EXTENSION] = {}
            capabilities = {**capabilities, "extensions": extensions}
        return capabilities

    # --- routing what the server sends ------------------------------------------

    def _facts(self) -> dict[str, Any]:
        """What every MCP span of this connection says of it (:func:`telemetry.facts`)."""
        version, session_id = self.protocol_version, self._stream.extra(StreamAttribute.session_id, None)
        made = self._facts_of
        if made is None or made[0] != version or made[1] != session_id:
            made = self._facts_of = (version, session_id, telemetry.facts(version, self._network, session_id))
        return made[2]

    def _on_request(self, request: IncomingRequest) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        if not self._telemetry.recording:
            return self._serving.answer(request)
        call = self._telemetry.server_call(request.method, request.params, request.id, self._facts)
        try:
            with call.active():
                answer = self._serving.answer(request)
        except BaseException as exc:
            call.end(exc)
            raise
        if isinstance(answer, dict):
            call.stop()
            self._answered = call  # its span is recorded once the answer is sent (_replied)
            return answer
        return call.answered(answer)

    def _noticed(self, method: str, params: dict[str, Any] | None, sent: bool) -> dict[str, Any] | None:
        """A notification's span (:meth:`telemetry.Telemetry.notified`)."""
        return self._telemetry.notified(method, params, sent, self._facts)

    def _replied(self) -> None:
        """The answer given at once is sent: record its request's SERVER span now."""
        call, self._answered = self._answered, None
        if call is not None:
            call.end()

    async def _on_notification(self, method: str, params: dict[str, Any] | None) -> None:
        if method in _TASK_NEWS and self._task_news.deliver(params):
            return  # about a task this connection follows
        if method == "notifications/subscriptions/acknowledged" and self._task_news.acknowledge(params):
            return  # a subscription to a task's notifications
        if method == "notifications/tools/list_changed":
            self._tools = None
        await self._serving.handle_notification(method, params)

    async def _fulfil(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """Answer one input request through the receiver; RpcError when it cannot be."""
        call = self._telemetry.server_call(method, params, None, self._facts)
        try:
            return await call.answered(self._serving.fulfil(method, params))
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
    def requestor(self) -> ServerHandler:
        """The receiver's scope for this server (for plain callbacks, the :class:`Callbacks`)."""
        return self._serving

    @property
    def _serving(self) -> ServerHandler:
        if self._handler is None:  # the session starts only once the scope is attached
            raise RuntimeError("the connection is not attached to its receiver")
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
        self._serving.cancel_tasks(f"The task was cancelled: {reason}.")
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
        The request is a CLIENT span (:mod:`host_receiver.telemetry`) whose context
        travels in ``_meta``.
        """
        with self._telemetry.client_call(method, params, self._facts()) as call:
            result = await self._sent(method, call.params, timeout, on_progress)
            call.result(result)
        return result

    async def _sent(
        self,
        method: str,
        params: dict[str, Any] | None,
        timeout: float | None,
        on_progress: ProgressCallback | None,
        sent_as: Callable[[RequestId], None] | None = None,
        peer_ends: bool = False,
    ) -> dict[str, Any]:
        if self.era is Era.LEGACY:
            return await self._session.request(method, params, timeout=timeout, on_progress=on_progress)
        stamped = self._stamped(params)
        headers = self._mirror.headers(method, stamped) if self._mirror is not None else None
        version, again = self.protocol_version, False
        while True:
            try:
                result = await self._session.request(
                    method,
                    stamped,
                    timeout=timeout,
                    on_progress=on_progress,
                    headers=headers,
                    sent_as=sent_as,
                    peer_ends=peer_ends,
                )
                break
            except RpcError as exc:
                if exc.code == UNSUPPORTED_VERSION:
                    if not again and lists_refused_version(version, exc):
                        logger.info(
                            "%s refused %s in %s, which it lists: once more", self.name, method, version
                        )
                        again = True
                        continue
                    raise version_refused(self.name, method, version, exc, again=again) from None
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
            **envelope(version, dump(self._options.client_info), self.capabilities_for(version)),
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

    async def list_tools(self, *, timeout: float | None = None) -> list[ListedTool]:
        """Every tool the server offers, following ``nextCursor`` to the last page.

        ``timeout`` applies to each page. On HTTP, tools whose header
        annotations break the binding's rules are left out, with a warning.
        A tool that breaks the schema is a :class:`BadResult` naming its field.
        """
        tools: list[ListedTool] = []
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            page = await self.request(
                "tools/list", {"cursor": cursor} if cursor is not None else None, timeout=timeout
            )
            items = page.get("tools")
            if not isinstance(items, list):
                raise ProtocolError("tools/list result has no tools array")
            page_tools = [t for t in items if isinstance(t, dict)]
            accepted = (
                page_tools if self._mirror is None else self._mirror.accept_tools(page_tools, self.name)
            )
            tools.extend(parse_tools(accepted, server=self.name))
            cursor = page.get("nextCursor")
            if cursor is None:
                self._tools = {tool.name: tool for tool in tools}
                return tools
            if not isinstance(cursor, str) or cursor in seen:
                raise ProtocolError(f"tools/list returned a bad or repeated cursor: {safe_id(cursor)}")
            seen.add(cursor)

    async def tool_definition(self, name: str, *, timeout: float | None = None) -> ListedTool | None:
        """The tool ``name`` as the server lists it (None if it lists no such tool).

        The tools are listed (every page) when no full list is known yet, or
        the server said it changed (``notifications/tools/list_changed``);
        otherwise the last list answers. A server without the ``tools``
        capability lists none.
        """
        if self._tools is None:
            if "tools" not in self.server_capabilities:
                return None
            await self.list_tools(timeout=timeout)
        return self._tools.get(name) if self._tools is not None else None

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        on_task: TaskObserver | None = None,
        task: bool | None = None,
        task_ttl_ms: int | None = None,
    ) -> CallToolResult:
        """Call a tool and return its final :class:`CallToolResult`.

        A tool that failed is a result with ``is_error=True``, not an
        exception. On a modern connection the server's input rounds are
        answered and its task (tasks extension) followed to its end;
        ``on_task`` is told each new state of that task once. ``timeout`` applies to
        each request sent (but ``tasks/result``, which waits for the task's
        end). A result that breaks the schema is a :class:`BadResult` naming
        the field.

        ``task`` is for 2025-11-25 servers (a 2026-07-28 server decides
        itself): True sends the call task-augmented (with ``task_ttl_ms`` as
        the ttl asked for, if given), False never, None (the default) when the
        tool's ``execution.taskSupport`` is ``"required"`` (the tools are
        listed first if the definition is not known). The task is followed to
        its end as above. Asking for a task a server or tool does not offer is
        a :class:`ProtocolError` saying which.
        """
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        if self.era is Era.LEGACY:
            augment = await self._task_member(name, task, task_ttl_ms, timeout)
            if augment is not None:
                params["task"] = augment
                result = await self._legacy_task_call(params, timeout, on_progress, on_task)
                return parse_result(CallToolResult, "tools/call", result, server=self.name)
        elif self._mirror is not None:  # its x-mcp-header annotations are mirrored: know them first
            await self.tool_definition(name, timeout=timeout)
            self._mirror.check_callable(name, self.name)
        try:
            result = await self._with_rounds("tools/call", params, timeout, on_progress, on_task)
        except RpcError as exc:
            if exc.code != HEADER_MISMATCH or self.era is Era.LEGACY:
                raise
            logger.info("%s refused the headers of tools/call %s; listing the tools again", self.name, name)
            await self.list_tools(timeout=timeout)
            if self._mirror is not None:
                self._mirror.check_callable(name, self.name)
            result = await self._with_rounds("tools/call", params, timeout, on_progress, on_task)
        return parse_result(CallToolResult, "tools/call", result, server=self.name)

    async def _task_member(
        self, name: str, task: bool | None, ttl_ms: int | None, timeout: float | None
    ) -> dict[str, Any] | None:
        """The ``task`` of a 2025-11-25 ``tools/call`` of ``name``, or None to call it plainly."""
        if task is False:
            return None
        offered = self.server_capabilities.get("tasks")
        requests = offered.get("requests") if isinstance(offered, dict) else None
        tools = requests.get("tools") if isinstance(requests, dict) else None
        if not (isinstance(tools, dict) and isinstance(tools.get("call"), dict)):
            if task:
                raise ProtocolError(
                    f"{self.name} does not run tool calls as tasks "
                    "(its capabilities have no tasks.requests.tools.call)"
                )
            return None
        tool = await self.tool_definition(name, timeout=timeout)
        execution = (tool.model_extra or {}).get("execution") if tool is not None else None
        support = execution.get("taskSupport") if isinstance(execution, dict) else None
        if task is None and support != "required":
            return None
        if task and tool is not None and support not in ("optional", "required"):
            shown = "absent" if support is None else repr(safe_text(str(support), 40))
            raise ProtocolError(
                f"tool {safe_text(name, 80)!r} of {self.name} does not run as a task "
                f"(its execution.taskSupport is {shown})"
            )
        return {} if ttl_ms is None else {"ttl": ttl_ms}

    async def _legacy_task_call(
        self,
        params: dict[str, Any],
        timeout: float | None,
        on_progress: ProgressCallback | None,
        on_task: TaskObserver | None,
    ) -> dict[str, Any]:
        """A task-augmented 2025-11-25 ``tools/call``, followed to its result."""
        result = await self._session.request("tools/call", params, timeout=timeout, on_progress=on_progress)
        created = result.get("task")
        if "content" in result or not isinstance(created, dict):
            return result  # the server ran it as a plain call
        return await self._follow(created, params, timeout, on_task)

    async def _follow(
        self,
        created: dict[str, Any],
        params: dict[str, Any],
        timeout: float | None,
        on_task: TaskObserver | None,
        born: float | None = None,
    ) -> dict[str, Any]:
        """Follow the server's task ``created`` describes (a ``tools/call`` of ``params``) to its end,
        kept in the task store while it runs when the options name one. ``born``: when the task was
        created (wall clock; None: now), whence its ttl counts."""
        legacy = self.era is Era.LEGACY

        async def send_task_request(method: str, task_params: dict[str, Any]) -> dict[str, Any]:
            if legacy:
                waits = None if method == "tasks/result" else timeout
                return await self._session.request(method, task_params, timeout=waits)
            return await self.request(method, task_params, timeout=timeout)

        async def follow() -> dict[str, Any]:
            news = self._task_news
            if legacy:
                return await follow_legacy_task(created, send_task_request, news, observer=on_task, born=born)
            listen = self._listen if self._sends_task_news else None
            return await follow_task(
                created, send_task_request, self._fulfil, news, observer=on_task, listen=listen, born=born
            )

        store = self._options.task_store
        if store is None or self._address is None:
            return await follow()
        task = remote_task(created, legacy=legacy)
        kept = StoredTask.new(
            self._address,
            self.protocol_version,
            task.task_id,
            params["name"],
            params.get("arguments"),
            task.ttl_ms,
            created=born,
        )
        return await store.keeping(kept, follow)

    @property
    def _sends_task_news(self) -> bool:
        """Whether the server advertises the tasks extension, whose ``notifications/tasks`` a
        ``subscriptions/listen`` asks for (extension-tasks-overview.mdx)."""
        extensions = self.server_capabilities.get("extensions")
        return isinstance(extensions, dict) and TASKS_EXTENSION in extensions

    async def _listen(self, task_id: str, sent_as: Callable[[RequestId], None]) -> None:
        """Hold a ``subscriptions/listen`` for the status notifications of ``task_id`` until it ends
        (the server ends it with its result or ``notifications/cancelled``, its stream drops, or the
        caller cancels: the stream is closed)."""
        params = {"notifications": {"taskIds": [task_id]}}
        with self._telemetry.client_call("subscriptions/listen", params, self._facts()) as call:
            result = await self._sent(
                "subscriptions/listen", call.params, None, None, sent_as, peer_ends=True
            )
            call.result(result)

    async def resume_task(
        self,
        task_id: str,
        tool: str,
        *,
        arguments: dict[str, Any] | None = None,
        timeout: float | None = None,
        on_task: TaskObserver | None = None,
    ) -> CallToolResult:
        """Follow the server's task ``task_id``, created for a ``tools/call`` of ``tool`` (maybe by a
        process that has since ended), to its end: its final :class:`CallToolResult`.

        It starts from the task's ``tasks/get`` answer and goes on as
        :meth:`call_tool` does (kept in the task store meanwhile, when the
        options name one). The ttl backstop counts from the task's creation:
        its record's in the task store, else the server's ``createdAt``.
        A task the server does not know is a :class:`RemoteTaskLost`.
        """
        legacy = self.era is Era.LEGACY

        async def get(method: str, task_params: dict[str, Any]) -> dict[str, Any]:
            return await self.request(method, task_params, timeout=timeout)

        store = self._options.task_store
        kept = None
        if store is not None and self._address is not None:
            kept = await store.find(self._address, task_id)
        try:
            created = await current_task(get, task_id, legacy=legacy)
        except RemoteTaskLost:
            if kept is not None and store is not None:
                await store.remove(kept.id)
            raise
        params: dict[str, Any] = (
            {"name": tool} if arguments is None else {"name": tool, "arguments": arguments}
        )
        born = kept.created if kept is not None else birth(created)
        result = await self._follow(created, params, timeout, on_task, born)
        return parse_result(CallToolResult, "tools/call", result, server=self.name)

    async def cancel_task(self, task_id: str, *, timeout: float | None = None) -> None:
        """Send ``tasks/cancel`` for the server's task ``task_id`` (cancellation is cooperative: the
        answer is an ack). A task the server does not know, or will not cancel (it has ended), is a
        :class:`RemoteTaskLost`."""
        try:
            await self.request("tasks/cancel", {"taskId": task_id}, timeout=timeout)
        except RpcError as exc:
            if exc.code != INVALID_PARAMS:
                raise
            raise RemoteTaskLost(
                f"the server does not cancel task {safe_id(task_id)}: {safe_text(exc.message, 300)}"
            ) from None

    @asynccontextmanager
    async def watch_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        task: bool | None = None,
        task_ttl_ms: int | None = None,
    ) -> AsyncIterator[TaskHandle]:
        """Call a tool as :meth:`call_tool` does, and yield a :class:`TaskHandle` to watch it.

            async with server.watch_tool("deploy", {"env": "prod"}) as call:
                async for task in call.updates():
                    show(task.status, task.status_message)
                result = await call.result()

        The call runs while the block does; leaving the block before it ends
        cancels it (the server's task gets ``tasks/cancel``).
        """

        def call(observer: TaskObserver) -> Awaitable[CallToolResult]:
            return self.call_tool(
                name,
                arguments,
                timeout=timeout,
                on_progress=on_progress,
                on_task=observer,
                task=task,
                task_ttl_ms=task_ttl_ms,
            )

        handle = TaskHandle()
        async with anyio.create_task_group() as group:
            group.start_soon(handle._run, call)
            try:
                yield handle
            finally:
                handle.cancel()

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, *, timeout: float | None = None
    ) -> GetPromptResult:
        """Get a prompt (answering a modern server's input rounds); returns :class:`GetPromptResult`."""
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        result = await self._with_rounds("prompts/get", params, timeout, None, None)
        return parse_result(GetPromptResult, "prompts/get", result, server=self.name)

    async def read_resource(self, uri: str, *, timeout: float | None = None) -> ReadResourceResult:
        """Read a resource (answering a modern server's input rounds); returns :class:`ReadResourceResult`."""
        result = await self._with_rounds("resources/read", {"uri": uri}, timeout, None, None)
        return parse_result(ReadResourceResult, "resources/read", result, server=self.name)

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

        assert method in _ROUND_METHODS
        with self._telemetry.logical_call(method, params, self._facts()) as call:
            result = await with_input_rounds(
                method, params, send, self._fulfil, max_rounds=self._options.max_input_rounds
            )
            if result_type(result) != "task":
                return result
            if method != "tools/call" or not self._options.tasks_extension:
                raise BadResult(
                    f"{self.name} answered {method} with a task, which this request did not allow"
                )

            async def observe(task: RemoteTask) -> None:
                call.status(task.status, task.status_message)
                if on_task is not None:
                    await on_task(task)

            return await self._follow(result, params, timeout, observe)

    async def wait_closed(self) -> None:
        """Return once the connection has ended (for instance, the server exited)."""
        await self._session.wait_closed()

    def __repr__(self) -> str:
        version = self._agreement.version if self._agreement is not None else "not agreed"
        return f"<{type(self).__name__} {self.name!r} {version}>"
