"""The MCP client side of one connection, in either protocol era: agreement, then traffic.

:class:`ClientConnection` is one class made of a part per concern, each a
mixin over :class:`~host_receiver.client._core.ConnectionCore` (the state,
and what the agreement established): routing what the server sends
(:mod:`host_receiver.client._inbound`), sending for the agreed era
(:mod:`host_receiver.client._sending`), following the server's tasks
(:mod:`host_receiver.client.remote_tasks._calls`) and tools, prompts and
resources (:mod:`host_receiver.client._features`). This module connects and
agrees; a Streamable HTTP URL whose server predates it falls back to
HTTP+SSE (:mod:`host_receiver.client._sse_fallback`).

Rules:

- ``ClientConnection.connect()`` opens the transport and starts a session
  (live from the first byte: a server may ping early), then agrees on the
  era and version (:mod:`host_receiver.client._negotiation`: ``protocol="auto"``
  probes with ``server/discover`` and falls back to ``initialize``).
  A legacy agreement tells the stream's binding the version, sends
  ``notifications/initialized`` and opens the binding's listener (the HTTP GET
  stream); a modern one needs none of these. Only then is the connection
  handed out. Given an :class:`~host_receiver.transports.http.HttpTransport`
  whose server answers 400, 404 or 405 (it predates Streamable HTTP), it
  connects over HTTP+SSE at the same URL instead, unless the protocol is
  pinned to 2026-07-28 (:mod:`host_receiver.client._sse_fallback`).
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
  ``tools/call``, its tasks (:mod:`host_receiver.client.remote_tasks`), and return
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
  follows the task (:func:`~host_receiver.client.remote_tasks._legacy.follow_legacy_task`;
  the server's ``notifications/tasks/status`` about it go there).
- A modern server that advertises the tasks extension is sent
  ``subscriptions/listen`` for each task followed (:meth:`_listen`, one
  request held open); its acknowledgement and ``notifications/tasks`` go to
  the connection's :class:`~host_receiver.client.remote_tasks._news.TaskNews`.
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

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Self

import anyio

from host_receiver import telemetry
from host_receiver.client._features import ServerFeatures
from host_receiver.client._mirror import HeaderMirror
from host_receiver.client._negotiation import agree
from host_receiver.client._serving import Callbacks, ServerHandler, ServesServers
from host_receiver.client._sse_fallback import falling_back
from host_receiver.client.options import ConnectionOptions, default_client_info, options_from_keywords
from host_receiver.client.remote_tasks._handle import TaskHandle
from host_receiver.client.remote_tasks._news import TaskNews
from host_receiver.client.remote_tasks.store import server_address
from host_receiver.protocol.modern import RemoteTask
from host_receiver.protocol.versions import Era
from host_receiver.sanitize import safe_logger
from host_receiver.session import NotificationHandler, RequestHandler, Session
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


class ClientConnection(ServerFeatures):
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
        self._known_version = known_version
        self._binding = stream.extra(StreamAttribute.binding, None)
        self._mirror = HeaderMirror() if self._binding is not None and self._binding.mirrors_headers else None
        self._receiver = receiver
        self._options = options
        self._telemetry = options.telemetry or telemetry.default_telemetry()
        self._network = telemetry.network(
            stream.extra(StreamAttribute.network_transport, None), stream.extra(StreamAttribute.url, None)
        )
        self._facts_of = None
        self._answered = None
        self._named = name is not None
        self._handler = None
        self._agreement = None
        self._tools = None
        self._task_news = TaskNews()
        self._address = None
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
        sse_urls: set[str] | None = None,
    ) -> AsyncIterator[Self]:
        """Connect over ``transport``, or over HTTP+SSE when its server predates Streamable HTTP
        (:func:`~host_receiver.client._sse_fallback.falling_back`; ``sse_urls``: the URLs the caller
        found to serve only HTTP+SSE, a ``Host``'s)."""

        def over(chosen: Transport, version: str | None) -> AbstractAsyncContextManager[Self]:
            return cls._connected_over(chosen, receiver, options, name, version)

        label = name or str(getattr(transport, "url", "server"))
        connection: Self
        async with falling_back(
            transport, options, over, known_version=known_version, label=label, sse_urls=sse_urls
        ) as connection:
            yield connection

    @classmethod
    @asynccontextmanager
    async def _connected_over(
        cls,
        transport: Transport,
        receiver: ServesServers,
        options: ConnectionOptions,
        name: str | None,
        known_version: str | None,
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

    async def wait_closed(self) -> None:
        """Return once the connection has ended (for instance, the server exited)."""
        await self._session.wait_closed()

    def __repr__(self) -> str:
        version = self._agreement.version if self._agreement is not None else "not agreed"
        return f"<{type(self).__name__} {self.name!r} {version}>"
