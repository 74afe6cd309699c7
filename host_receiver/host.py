"""The host: one receiver serving any number of server connections at once.

Each connection is its own requestor scope in the receiver (its tasks are
invisible to the others) and runs in its own task of the host's task group, so
a server that fails or exits ends only its own connection. Leaving the host's
``async with`` block closes every connection.

    async with Host(Receiver(sampling=..., elicitation=...)) as host:
        server = await host.connect_stdio("notes", "python", ["server.py"])
        print(await server.call_tool("summarise", {"path": "a.txt"}))

Rules:

- A connection's server gets the minimal environment of
  :func:`~host_receiver.transports.stdio.safe_environment` plus what the
  caller names in ``env``: the host's secrets (provider keys) never reach a
  server unless named.
- :meth:`Host.connect` returns once the handshake is done; a handshake that
  fails raises from it. A connection that fails later ends with
  :attr:`ServerConnection.error` set and a warning logged.
- Closing a connection (or the host) winds it down first: the server's live
  tasks are cancelled, so every ``tasks/result`` waiting on one is answered,
  and every request still in flight is answered -32603 before the server's
  input closes (:meth:`ClientConnection.wind_down`).
"""

from __future__ import annotations

import gc
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

import anyio
import anyio.abc
import httpx

from host_receiver.connection import DEFAULT_MAX_INPUT_ROUNDS, ClientConnection
from host_receiver.protocol.types import Implementation
from host_receiver.receiver import Receiver
from host_receiver.sanitize import safe_logger
from host_receiver.transports.base import MessageStream, Transport
from host_receiver.transports.http import HttpTransport
from host_receiver.transports.stdio import StdioTransport

__all__ = ["Host", "ServerConnection", "tune_gc_for_serving"]

logger = safe_logger("host_receiver.host")


class ServerConnection(ClientConnection):
    """A server connected by a :class:`Host`: the connection, and how it ends."""

    def __init__(self, stream: MessageStream, **options: Any) -> None:
        super().__init__(stream, **options)
        self._stop = anyio.Event()
        self._ended = anyio.Event()
        #: Why the connection ended (None while it is open or when it closed normally).
        self.error: BaseException | None = None

    @property
    def closed(self) -> bool:
        return self._ended.is_set()

    async def close(self) -> None:
        """Close the connection and wait until its work is cancelled and its tasks deleted."""
        self._stop.set()
        await self._ended.wait()

    async def wait_closed(self) -> None:
        """Wait until the server goes away or :meth:`close` is called."""
        await self._ended.wait()


class Host:
    """Connects to MCP servers and serves their sampling and elicitation requests."""

    def __init__(
        self,
        receiver: Receiver,
        *,
        client_info: Implementation | None = None,
        protocol: str = "auto",
        max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
        tasks_extension: bool = True,
    ) -> None:
        self.receiver = receiver
        self.client_info = client_info
        #: The protocol choice of every connection unless :meth:`connect` names another.
        self.protocol = protocol
        self.max_input_rounds = max_input_rounds
        self.tasks_extension = tasks_extension
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

    async def connect(
        self, name: str, transport: Transport, *, protocol: str | None = None
    ) -> ServerConnection:
        """Connect to a server; returns once the protocol is agreed (raises if that fails).

        ``protocol`` is ``"auto"`` (the host's default: probe, then fall back to
        the handshake), ``"2026-07-28"`` or ``"2025-11-25"``.
        """
        if self._group is None:
            raise RuntimeError("use the host as 'async with Host(...) as host:' before connecting")
        if name in self.servers and not self.servers[name].closed:
            raise ValueError(f"a server named {name!r} is already connected")
        server: ServerConnection = await self._group.start(
            self._serve, name, transport, protocol or self.protocol
        )
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
        protocol: str | None = None,
    ) -> ServerConnection:
        """Start a server process and connect to it over stdio (a minimal environment plus ``env``)."""
        transport = StdioTransport(command, args, env=env, cwd=cwd, name=name)
        return await self.connect(name, transport, protocol=protocol)

    async def connect_url(
        self,
        name: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: httpx.Auth | None = None,
        protocol: str | None = None,
    ) -> ServerConnection:
        """Connect to a Streamable HTTP server."""
        return await self.connect(name, HttpTransport(url, headers=headers, auth=auth), protocol=protocol)

    async def _serve(
        self,
        name: str,
        transport: Transport,
        protocol: str,
        *,
        task_status: anyio.abc.TaskStatus[ServerConnection] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        server: ServerConnection | None = None
        try:
            async with ServerConnection.connect(
                transport,
                receiver=self.receiver,
                client_info=self.client_info,
                name=name,
                protocol=protocol,
                max_input_rounds=self.max_input_rounds,
                tasks_extension=self.tasks_extension,
            ) as server:
                task_status.started(server)
                async with anyio.create_task_group() as group:

                    async def stop_on_request() -> None:
                        assert server is not None
                        await server._stop.wait()
                        await server.wind_down("the client is closing the connection")
                        group.cancel_scope.cancel()

                    group.start_soon(stop_on_request)
                    await server.session.wait_closed()
                    group.cancel_scope.cancel()
        except Exception as exc:
            if server is None:
                raise
            server.error = exc
            logger.warning("connection to %s ended: %s", name, exc)
        finally:
            if server is not None:
                server._ended.set()


def tune_gc_for_serving() -> None:
    """Set the cyclic garbage collector up for a process that holds thousands of tasks.

    Freezes what start-up made (modules, configuration) out of the collector's
    way and lets it run less often. In the benchmarks this is 10 to 20 % of a
    busy host's CPU. It changes process-wide settings, so the library never
    calls it by itself: a host calls it once, after start-up (the CLI does).
    """
    gc.freeze()
    gc.set_threshold(20_000, 20, 50)
