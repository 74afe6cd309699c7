"""The host: one receiver serving any number of server connections at once.

Each connection is its own requestor scope in the receiver (its tasks are
invisible to the others) and runs in its own task of the host's task group, so
a server that fails or exits ends only its own connection. Leaving the host's
``async with`` block closes every connection.

    async with Host(Receiver(sampling=..., elicitation=...)) as host:
        server = await host.connect_stdio("notes", "python", ["server.py"])
        print(await server.call_tool("summarise", {"path": "a.txt"}))
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

import anyio
import anyio.abc
import httpx

from host_receiver.connection import ClientConnection
from host_receiver.protocol.types import Implementation
from host_receiver.receiver import Answer, Receiver, Requestor
from host_receiver.session import IncomingRequest
from host_receiver.transports.base import Transport
from host_receiver.transports.http import HttpTransport
from host_receiver.transports.stdio import StdioTransport

logger = logging.getLogger("host_receiver.host")


class ServerConnection:
    """A connected server: call its tools, send it requests, see how it ended."""

    def __init__(self, name: str, connection: ClientConnection, requestor: Requestor) -> None:
        self.name = name
        self.connection = connection
        self.requestor = requestor
        self._stop = anyio.Event()
        self._closed = anyio.Event()
        #: Why the connection ended (None while it is open or when it closed normally).
        self.error: BaseException | None = None

    @property
    def protocol_version(self) -> str:
        return self.connection.protocol_version

    @property
    def server_info(self) -> Implementation:
        return self.connection.server_info

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    @property
    def closed_reason(self) -> str | None:
        """Why the connection ended, in words (None while it is open)."""
        return self.connection.session.closed_reason

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every tool the server offers (all pages)."""
        return await self.connection.list_tools()

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        """Call a tool; returns the ``CallToolResult`` as JSON."""
        return await self.connection.call_tool(name, dict(arguments or {}), timeout=timeout)

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        """Send any request; returns its result or raises RpcError."""
        return await self.connection.request(method, params, timeout=timeout)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self.connection.notify(method, params)

    async def close(self) -> None:
        """Close the connection and wait until its work is cancelled and its tasks deleted."""
        self._stop.set()
        await self._closed.wait()

    async def wait_closed(self) -> None:
        """Wait until the server goes away or :meth:`close` is called."""
        await self._closed.wait()


class Host:
    """Connects to MCP servers and serves their sampling and elicitation requests."""

    def __init__(self, receiver: Receiver, *, client_info: Implementation | None = None) -> None:
        self.receiver = receiver
        self.client_info = client_info
        self.servers: dict[str, ServerConnection] = {}
        self._group: anyio.abc.TaskGroup | None = None

    async def __aenter__(self) -> Host:
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._group is not None
        for server in self.servers.values():
            server._stop.set()
        return await self._group.__aexit__(exc_type, exc, tb)

    async def connect(self, name: str, transport: Transport) -> ServerConnection:
        """Connect to a server; returns once it is initialised (raises if that fails)."""
        if self._group is None:
            raise RuntimeError("use the host as 'async with Host(...) as host:' before connecting")
        if name in self.servers and not self.servers[name].closed:
            raise ValueError(f"a server named {name!r} is already connected")
        server: ServerConnection = await self._group.start(self._serve, name, transport)
        self.servers[name] = server
        return server

    async def connect_stdio(
        self,
        name: str,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> ServerConnection:
        """Start a server process and connect to it over stdio."""
        transport = StdioTransport(command, args, env=env, inherit_env=True, cwd=cwd, name=name)
        return await self.connect(name, transport)

    async def connect_url(
        self,
        name: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: httpx.Auth | None = None,
    ) -> ServerConnection:
        """Connect to a Streamable HTTP server."""
        return await self.connect(name, HttpTransport(url, headers=headers, auth=auth))

    async def _serve(
        self,
        name: str,
        transport: Transport,
        *,
        task_status: anyio.abc.TaskStatus[ServerConnection] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        started = False
        server: ServerConnection | None = None
        try:
            notify = _LateNotify()
            async with self.receiver.attach(notify, name=name) as requestor:

                def on_request(request: IncomingRequest) -> Answer:
                    return requestor.dispatch(request.method, request.params)

                async with ClientConnection.connect(
                    transport,
                    capabilities=self.receiver.capabilities(),
                    client_info=self.client_info,
                    request_handler=on_request,
                    notification_handler=requestor.handle_notification,
                    name=name,
                    on_initialized=lambda init: setattr(requestor, "protocol_version", init.protocol_version),
                ) as connection:
                    notify.bind(connection)
                    requestor.notify_soon = connection.session.notify_soon
                    server = ServerConnection(name, connection, requestor)
                    task_status.started(server)
                    started = True
                    async with anyio.create_task_group() as group:

                        async def stop_on_request() -> None:
                            await server._stop.wait()
                            group.cancel_scope.cancel()

                        group.start_soon(stop_on_request)
                        await connection.wait_closed()
                        group.cancel_scope.cancel()
        except Exception as exc:
            if not started:
                raise
            assert server is not None
            server.error = exc
            logger.warning("connection to %s ended: %s", name, exc)
        finally:
            if server is not None:
                server._closed.set()


def tune_gc_for_serving() -> None:
    """Set the cyclic garbage collector up for a process that holds thousands of tasks.

    Freezes what start-up made (modules, configuration) out of the collector's
    way and lets it run less often. In the benchmarks this is 10 to 20 % of a
    busy host's CPU. It changes process-wide settings, so the library never
    calls it by itself: a host calls it once, after start-up (the CLI does).
    """
    gc.freeze()
    gc.set_threshold(20_000, 20, 50)


class _LateNotify:
    """Sends notifications on a connection that exists only once the handshake is done."""

    def __init__(self) -> None:
        self._target: ClientConnection | None = None
        self._ready = anyio.Event()

    def bind(self, connection: ClientConnection) -> None:
        self._target = connection
        self._ready.set()

    async def __call__(self, method: str, params: dict[str, Any] | None) -> None:
        await self._ready.wait()
        assert self._target is not None
        await self._target.notify(method, params)
