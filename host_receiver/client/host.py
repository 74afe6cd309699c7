"""The host: one receiver serving any number of server connections at once.

Each connection is its own requestor scope in the receiver (its tasks are
invisible to the others) and runs in its own task of the host's task group, so
a server that fails or exits ends only its own connection. Leaving the host's
``async with`` block closes every connection.

    async with Host(Receiver(sampling=..., elicitation=...)) as host:
        server = await host.connect_stdio("notes", "python", ["server.py"])
        print((await server.call_tool("summarise", {"path": "a.txt"})).text)

Rules:

- A connection's server gets the minimal environment of
  :func:`~host_receiver.transports.stdio.safe_environment` plus what the
  caller names in ``env``: the host's secrets (provider keys) never reach a
  server unless named.
- One :class:`~host_receiver.client.options.ConnectionOptions` reaches every
  connection (``connect*(options=...)`` replaces it for one).
- Each connection is a :meth:`ServerConnection.run` in the host's task
  group; the host ends them only through their own ``close_soon()``.
- :meth:`Host.connect` returns once the handshake is done; a handshake that
  fails raises from it. A connection that fails later ends with
  :attr:`ServerConnection.error` set and a warning logged.
- Closing a connection (or the host) winds it down first: the server's live
  tasks are cancelled, so every ``tasks/result`` waiting on one is answered,
  and every request still in flight is answered -32603 before the server's
  input closes (:meth:`ClientConnection.wind_down`).
- The era is cached per HTTP origin (scheme, host, port): a connection to an
  origin that agreed on a legacy version before skips the ``server/discover``
  probe (``auto`` mode; it probes afresh if the handshake fails).
- A Streamable HTTP connection whose handshake gets HTTP 400, 404 or 405
  without a modern JSON-RPC error (its server predates Streamable HTTP)
  falls back to the HTTP+SSE transport of 2024-11-05 at the same URL, with
  the same headers and auth, and the ``initialize`` handshake (unless the
  protocol is pinned to 2026-07-28); a server that serves neither fails with
  both answers named (2026-07-28 streamable-http.mdx, "Backward
  Compatibility"). The connection does this
  (:mod:`host_receiver.client._sse_fallback`, a lone ``ClientConnection``
  too); the host remembers such a URL (``_sse_urls``, one set per host):
  its next connection goes straight to HTTP+SSE (and tries afresh if that
  fails).
- :meth:`Host.resume_call` continues a call kept in the shared store
  (``ConnectionOptions.call_store``; :mod:`host_receiver.client._kept_calls`):
  it takes the call's lease before it connects, to the server the record
  names (a stdio server gets the kept names of its environment variables
  from this process's environment) or to the transport given, which must be
  that same server.
"""

from __future__ import annotations

import gc
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from functools import partial
from types import TracebackType
from typing import Any

import anyio
import anyio.abc
import httpx

from host_receiver.client._kept_calls import KeptCall, kept_identity
from host_receiver.client.connection import ClientConnection, ServesServers
from host_receiver.client.options import ConnectionOptions, options_from_keywords
from host_receiver.client.remote_tasks.store import server_address, server_identity
from host_receiver.errors import UnknownCall
from host_receiver.protocol.results import CallToolResult, GetPromptResult, ReadResourceResult, parse_result
from host_receiver.receiver import Receiver
from host_receiver.sanitize import safe_id, safe_logger, safe_text
from host_receiver.transports.base import MessageStream, Transport
from host_receiver.transports.http import HttpTransport
from host_receiver.transports.stdio import StdioTransport

__all__ = ["Host", "ServerConnection", "tune_gc_for_serving"]

logger = safe_logger("host_receiver.client.host")


class ServerConnection(ClientConnection):
    """A server connected by a :class:`Host`: the connection, and how it ends.

    :meth:`run` is the whole life of one (the host runs it in a task of its
    group); :meth:`close` and :meth:`close_soon` end it.
    """

    def __init__(self, stream: MessageStream, **given: Any) -> None:
        super().__init__(stream, **given)
        self._stop = anyio.Event()
        self._ended = anyio.Event()
        self._error: BaseException | None = None

    @classmethod
    async def run(
        cls,
        transport: Transport,
        *,
        receiver: ServesServers,
        options: ConnectionOptions,
        name: str,
        known_version: str | None = None,
        sse_urls: set[str] | None = None,
        task_status: anyio.abc.TaskStatus[ServerConnection] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Connect, hand the connection to ``task_status``, and serve until it ends.

        It ends when the server goes away or :meth:`close` is called (then it
        winds down first). A failure before the connection is handed out
        raises; one after it is kept as :attr:`error` and logged. ``sse_urls``: the URLs found
        to serve only HTTP+SSE (the host's; kept up to date).
        """
        server: ServerConnection | None = None
        try:
            async with cls._connected(transport, receiver, options, name, known_version, sse_urls) as server:
                task_status.started(server)
                await server._serve()
        except Exception as exc:
            if server is None:
                raise
            server._error = exc
            logger.warning("connection to %s ended: %s", name, exc)
        finally:
            if server is not None:
                server._ended.set()

    async def _serve(self) -> None:
        async with anyio.create_task_group() as group:

            async def stop_on_request() -> None:
                await self._stop.wait()
                await self.wind_down("the client is closing the connection")
                group.cancel_scope.cancel()

            group.start_soon(stop_on_request)
            await self.session.wait_closed()
            group.cancel_scope.cancel()

    @property
    def error(self) -> BaseException | None:
        """Why the connection ended (None while it is open or when it closed normally)."""
        return self._error

    @property
    def closed(self) -> bool:
        """Whether the connection has ended."""
        return self._ended.is_set()

    def close_soon(self) -> None:
        """Ask the connection to close (it winds down first), without waiting."""
        self._stop.set()

    async def close(self) -> None:
        """Close the connection and wait until its work is cancelled and its tasks deleted."""
        self.close_soon()
        await self._ended.wait()

    async def wait_closed(self) -> None:
        """Wait until the server goes away or :meth:`close` is called."""
        await self._ended.wait()


class Host:
    """Connects to MCP servers and serves their sampling and elicitation requests.

    ``options`` (:class:`~host_receiver.client.options.ConnectionOptions`) reach
    every connection the host makes, unless a ``connect*`` call gives its own.
    """

    def __init__(
        self, receiver: Receiver, options: ConnectionOptions | None = None, **deprecated: Any
    ) -> None:
        self.receiver = receiver
        self._options = options_from_keywords(options, deprecated, "Host")
        self.servers: dict[str, ServerConnection] = {}
        self._versions: dict[str, str] = {}  # the version each HTTP origin agreed on (auto mode)
        self._sse_urls: set[str] = set()  # URLs found to serve only the HTTP+SSE transport
        self._lifetime = AsyncExitStack()
        self._group: anyio.abc.TaskGroup | None = None

    @property
    def options(self) -> ConnectionOptions:
        """What every connection gets unless its ``connect*`` call gives its own."""
        return self._options

    async def __aenter__(self) -> Host:
        self._group = await self._lifetime.enter_async_context(anyio.create_task_group())
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        for server in self.servers.values():
            server.close_soon()
        return await self._lifetime.__aexit__(exc_type, exc, tb)

    async def connect(
        self, name: str, transport: Transport, *, options: ConnectionOptions | None = None, **deprecated: Any
    ) -> ServerConnection:
        """Connect to a server; returns once the protocol is agreed (raises if that fails).

        ``options`` replace the host's for this connection (``protocol=`` is
        the 0.2 spelling, deprecated).
        """
        chosen = options_from_keywords(options or self.options, deprecated, "Host.connect")
        return await self._connect(name, transport, chosen)

    async def connect_stdio(
        self,
        name: str,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        options: ConnectionOptions | None = None,
        **deprecated: Any,
    ) -> ServerConnection:
        """Start a server process and connect to it over stdio (a minimal environment plus ``env``)."""
        chosen = options_from_keywords(options or self.options, deprecated, "Host.connect_stdio")
        transport = StdioTransport(command, args, env=env, cwd=cwd, name=name)
        return await self._connect(name, transport, chosen)

    async def connect_url(
        self,
        name: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: httpx.Auth | None = None,
        options: ConnectionOptions | None = None,
        **deprecated: Any,
    ) -> ServerConnection:
        """Connect to a Streamable HTTP server."""
        chosen = options_from_keywords(options or self.options, deprecated, "Host.connect_url")
        return await self._connect(name, HttpTransport(url, headers=headers, auth=auth), chosen)

    async def resume_call(
        self,
        call_id: str,
        *,
        transport: Transport | None = None,
        name: str | None = None,
        timeout: float | None = None,
    ) -> CallToolResult | GetPromptResult | ReadResourceResult:
        """Continue the call ``call_id`` kept in ``options.call_store`` (a 2026-07-28 call whose input
        round waited; docs/fleet.md): take its lease (:class:`~host_receiver.errors.CallLeased` when
        another process holds it), connect to its server (``transport``: that server reached another
        way, e.g. with a header; else as the record says), answer its input requests with their
        inbox items' answers or through this host's hooks, retry with them and ``requestState``
        (answering any further rounds) and return the final result, typed by the call's method.
        :class:`~host_receiver.errors.UnknownCall` when there is no such call waiting. The identity
        is computed from what the record would run, never taken from it: a record that says another
        is refused, as is a ``transport`` to another server (:class:`ValueError`); a stdio server
        started as kept gets none of this process's environment variables (give ``transport=``).
        """
        keeping = self.options.call_store
        if keeping is None:
            raise ValueError("resume_call needs ConnectionOptions(call_store=CallKeeping(store))")
        record = await keeping.store.call(call_id)
        if record is None:
            raise UnknownCall(f"no continuable call {safe_id(call_id)} in the store")
        if record.status != "waiting":
            raise UnknownCall(f"call {safe_id(call_id)} has {record.status}: there is nothing to continue")
        try:
            recorded = kept_identity(record.address)  # what the record would run, not what it says
        except ValueError as exc:
            raise ValueError(f"call {safe_id(call_id)} cannot be continued: {exc}") from None
        if transport is None:
            if record.server_identity != recorded:
                raise ValueError(
                    f"call {safe_id(call_id)}'s record says it was made on "
                    f"{safe_text(record.server_identity, None)}, but it would run {safe_text(recorded, None)}"
                )
            transport = _transport_of(record.address, name or call_id)
        else:
            address = server_address(transport)
            given = None if address is None else server_identity(address)
            if given != recorded:
                raise ValueError(
                    f"call {safe_id(call_id)} was made on {safe_text(recorded, None)}, "
                    f"not on the server given ({safe_text(given or 'unknown', None)})"
                )
        kept = KeptCall.resumed(keeping, record)
        await kept.claim()
        try:
            server = await self._connect(name or f"call {call_id}", transport, self.options)
        except BaseException:
            await kept.end(None)
            raise
        try:
            result = await server.resume_call(kept, timeout=timeout)
        finally:
            await server.close()
        if record.method == "prompts/get":
            return parse_result(GetPromptResult, record.method, result, server=server.name)
        if record.method == "resources/read":
            return parse_result(ReadResourceResult, record.method, result, server=server.name)
        return parse_result(CallToolResult, record.method, result, server=server.name)

    async def _connect(self, name: str, transport: Transport, options: ConnectionOptions) -> ServerConnection:
        if self._group is None:
            raise RuntimeError("use the host as 'async with Host(...) as host:' before connecting")
        if name in self.servers and not self.servers[name].closed:
            raise ValueError(f"a server named {name!r} is already connected")
        origin = _origin(transport)
        known = self._versions.get(origin) if origin is not None else None
        server = await self._start(name, transport, options, known)
        self.servers[name] = server
        if origin is not None:
            self._versions[origin] = server.protocol_version
        return server

    async def _start(
        self, name: str, transport: Transport, options: ConnectionOptions, known_version: str | None
    ) -> ServerConnection:
        assert self._group is not None
        run = partial(
            ServerConnection.run,
            transport,
            receiver=self.receiver,
            options=options,
            name=name,
            known_version=known_version,
            sse_urls=self._sse_urls,
        )
        server: ServerConnection = await self._group.start(run)
        return server


def _transport_of(address: dict[str, Any], name: str) -> Transport:
    """How a kept call's server is reached again: its command line in its directory, given none of
    this environment's variables (the names the record keeps are data others may have written:
    give ``transport=`` with the environment it needs), or its URL."""
    if "url" in address:
        return HttpTransport(str(address["url"]))
    command = [str(part) for part in address["command"]]
    return StdioTransport(command[0], command[1:], cwd=address.get("cwd"), name=name)


def _origin(transport: Transport) -> str | None:
    """The origin (scheme, host, port) of an HTTP transport's URL; None for any other transport."""
    if not isinstance(transport, HttpTransport):
        return None
    url = httpx.URL(transport.url)
    return f"{url.scheme}://{url.host}:{url.port or (443 if url.scheme == 'https' else 80)}"


def tune_gc_for_serving() -> None:
    """Set the cyclic garbage collector up for a process that holds thousands of tasks.

    Freezes what start-up made (modules, configuration) out of the collector's
    way and lets it run less often. In the benchmarks this is 10 to 20 % of a
    busy host's CPU. It changes process-wide settings, so the library never
    calls it by itself: a host calls it after start-up, once its providers are
    built (building one imports its SDK: objects made later are not frozen);
    the CLI calls it at start and again after building its providers.
    """
    gc.freeze()
    gc.set_threshold(20_000, 20, 50)
