"""``host-receiver run``: connect to one MCP server and serve its requests.

``host-receiver run [OPTIONS] -- COMMAND [ARG...]`` starts a stdio server;
``host-receiver run [OPTIONS] --url URL`` connects to a Streamable HTTP one;
``--server NAME`` to one the servers file names.
A stdio server gets a minimal environment plus what ``--env`` names
(docs/security.md). Without ``--call`` it prints one line on stderr
("connected to NAME (era, version), serving its requests, Ctrl-C to stop",
NAME as the server names itself) and serves the server's sampling and
elicitation requests until the server closes the connection or the user
presses Ctrl-C (exit 0).
With ``--call TOOL`` it calls the tool once, prints the final ``CallToolResult``
as JSON on stdout (never an intermediate ``input_required`` or task result:
input rounds are answered and tasks followed to their end) and exits 0, or 1
when the result has ``isError`` true, or 2 when the connection, the protocol or
the call failed; when the call failed or the tool reported an error and the
server has no such tool, stderr names the tools it has. Logs go to stderr, never
stdout; at INFO one line says which
protocol the connection speaks. ``--protocol`` chooses it (default ``auto``:
either era).
The hooks (``--approve``, ``--elicit``) are :mod:`host_receiver.cli._hooks`. The
commands of :mod:`host_receiver.cli._discover` take the same options
(:func:`add_connection_options`) and connect the same way (:func:`prepare`, :func:`serve`).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from functools import partial
from typing import Any

import anyio

from host_receiver.cli._fleet import end_inbox_session
from host_receiver.cli._hooks import (
    EXIT_FAILURE,
    EXIT_OK,
    InboxUnavailable,
    build_hooks,
    describe_error,
    describe_server,
    open_console,
    open_inbox,
    uses_terminal,
)
from host_receiver.cli._options import add_connection_options, root_uri, usage_error
from host_receiver.cli._progress import ProgressDisplay
from host_receiver.cli._show import (
    add_task_option,
    call_and_print,
    connected_line,
    print_stderr_tail,
    remote_task_store,
)
from host_receiver.cli._store import call_keeping
from host_receiver.cli._target import Target, json_object, prepare
from host_receiver.client.host import Host, ServerConnection, tune_gc_for_serving
from host_receiver.client.options import DEFAULT_DISCOVER_TIMEOUT, ConnectionOptions
from host_receiver.errors import ProviderError, StoreError, StoreUnreachable, UnsafeFile
from host_receiver.receiver import Receiver, ReceiverConfig
from host_receiver.receiver.tasks.store import MemoryTaskStore, TaskStore
from host_receiver.sanitize import safe_logger
from host_receiver.transports.base import Transport
from host_receiver.transports.stdio import StdioTransport
from providers import build_registry

__all__ = ["add_run_command", "run_command", "serve"]

logger = safe_logger("host_receiver.cli")


def add_run_command(commands: Any) -> None:
    """The ``run`` subcommand, added to ``commands`` (an argparse subparsers object)."""
    run = commands.add_parser(
        "run",
        help="connect to one MCP server and serve its requests",
        description="Connect to one MCP server (a command over stdio after '--', or --url) and "
        "serve its sampling and elicitation requests.",
        usage="host-receiver run [OPTIONS] -- COMMAND [ARG...]\n       host-receiver run [OPTIONS] --url URL"
        "\n       host-receiver run [OPTIONS] --server NAME",
    )
    add_connection_options(run)
    run.add_argument("--call", metavar="TOOL", help="call TOOL once, print its CallToolResult as JSON, exit")
    run.add_argument("--args", metavar="JSON", help="arguments for --call, as a JSON object")
    add_task_option(run)
    run.add_argument("server_command", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    run.set_defaults(func=run_command)


#: Tells the inbox and the terminal who a connected server is (:func:`describe_server`).
Describe = Callable[[ServerConnection], None]


def run_command(args: argparse.Namespace) -> int:
    """``host-receiver run``: check the arguments, then serve (or call one tool)."""
    arguments: dict[str, Any] = {}
    if args.args is not None:
        if args.call is None:
            return usage_error(args, "--args goes with --call")
        parsed = json_object(args.args)
        if isinstance(parsed, str):
            return usage_error(args, parsed)
        arguments = parsed
    if args.task and args.call is None:
        return usage_error(args, "--task goes with --call")
    target = prepare(args)
    if isinstance(target, int):
        return target
    if args.call is not None:
        progress = ProgressDisplay()
        call = partial(
            call_and_print, args.call, arguments, as_json=True, task=args.task or None, progress=progress
        )
        return anyio.run(serve, args, target, call, progress)
    return anyio.run(serve, args, target, None)


async def serve(
    args: argparse.Namespace,
    target: Target,
    body: Callable[[ServerConnection], Awaitable[int]] | None,
    progress: ProgressDisplay | None = None,
) -> int:
    """Connect to ``target`` with the hooks ``args`` select; run ``body`` (None: serve until the end).

    ``progress`` (the body's display of the server's progress) draws its bars
    in the terminal host's live line when the terminal host runs.
    """
    try:
        registry = build_registry(provider=args.provider, model=args.model)
        await registry.open()  # the models of entries that list none, from their APIs
    except ProviderError as exc:
        print(f"host-receiver: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    # Building the registry imported the provider's SDK (hundreds of thousands of objects,
    # made after main() froze start-up's): freeze them too, out of every later collection.
    tune_gc_for_serving()
    async with registry, AsyncExitStack() as stack:
        console = await stack.enter_async_context(open_console()) if uses_terminal(args) else None
        if progress is not None and console is not None:
            progress.use(console.activity)
        try:
            inbox = await stack.enter_async_context(open_inbox(args, identity=target.identity))
        except InboxUnavailable as exc:
            print(f"host-receiver: {exc}", file=sys.stderr)
            return EXIT_FAILURE
        try:
            keeping = await call_keeping(args, stack)
        except StoreUnreachable as exc:  # the host serves on; what needs a person is refused
            print(f"host-receiver: {exc}; calls waiting in an input round are not kept", file=sys.stderr)
            keeping = None
        except (StoreError, UnsafeFile) as exc:
            print(f"host-receiver: {exc}", file=sys.stderr)
            return EXIT_FAILURE
        sampling, elicitation = build_hooks(args, registry, console, inbox=inbox, identity=target.identity)
        store: TaskStore = MemoryTaskStore()
        config = ReceiverConfig(
            max_active_tasks=args.max_active_tasks, max_stored_tasks=args.max_stored_tasks
        )
        roots = [root_uri(r) for r in args.root] or None
        receiver = Receiver(
            sampling=sampling, elicitation=elicitation, store=store, config=config, roots=roots
        )
        host = await stack.enter_async_context(
            Host(
                receiver,
                ConnectionOptions(
                    protocol=args.protocol,
                    max_input_rounds=args.max_input_rounds,
                    tasks_extension=args.tasks_extension,
                    task_store=remote_task_store(
                        args, keeping.store if keeping is not None else None, keeping
                    ),
                    call_store=keeping,
                    init_timeout=args.connect_timeout,
                    discover_timeout=min(DEFAULT_DISCOVER_TIMEOUT, args.connect_timeout),
                ),
            )
        )
        describe = partial(describe_server, where=target.where, inbox=inbox, console=console, name=args.name)
        end_session = partial(end_inbox_session, inbox)
        if body is None:
            return await _serve_until_closed(host, target, describe, end_session)
        server = await _connect(host, target, describe)
        if server is None:
            return EXIT_FAILURE
        try:
            code = await body(server)
            if code == EXIT_FAILURE and server.closed:  # the server went away: its last words may say why
                print_stderr_tail(server.name, target.transport)
            return code
        finally:
            await end_session()
            await server.close()


async def _connect(host: Host, target: Target, describe: Describe) -> ServerConnection | None:
    """Connect (and ``describe`` the server to the inbox and terminal); on failure say why on
    stderr, with the server's last stderr lines.

    While connecting, a stdio server's stderr is logged at DEBUG: a legacy
    server answers the era probe with complaints that are no failure (the
    connection's INFO line says once that it is legacy); an error quotes them.
    """
    stdio = target.transport if isinstance(target.transport, StdioTransport) else None
    level = stdio.stderr_level if stdio is not None else logging.INFO
    if stdio is not None:
        stdio.stderr_level = logging.DEBUG
    try:
        server = await host.connect(target.name, target.transport)
    except Exception as exc:
        hint = " (--connect-timeout SECONDS waits longer)" if isinstance(exc, TimeoutError) else ""
        print(
            f"host-receiver: could not connect to {target.name}: {describe_error(exc)}{hint}", file=sys.stderr
        )
        print_stderr_tail(target.name, target.transport)
        return None
    finally:
        if stdio is not None:
            stdio.stderr_level = level
    if not target.named:
        call_by_own_name(server, target.transport)
    describe(server)
    return server


def call_by_own_name(server: ServerConnection, transport: Transport) -> None:
    """From now on, stderr names ``server`` as its cards do: by its own title (or name), not by its
    command's file name or its URL. The lines are escaped where they are written."""
    info = server.server_info
    own = info.title or info.name
    if not own.strip():
        return
    server.session.rename(own)
    if isinstance(transport, StdioTransport):
        transport.name = own


async def _serve_until_closed(
    host: Host, target: Target, describe: Describe, end_session: Callable[[], Awaitable[None]]
) -> int:
    # Listen for signals before connecting, so that one arriving just after the
    # handshake is not lost (it would kill the process with the default action).
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with anyio.create_task_group() as group:
            connected: list[ServerConnection] = []

            async def stop_on_signal() -> None:
                async for _ in signals:
                    named = connected[0].name if connected else target.name
                    logger.info("interrupted: closing the connection to %s", named)
                    await end_session()
                    for server in connected:
                        await server.close()
                    group.cancel_scope.cancel()
                    return

            group.start_soon(stop_on_signal)
            server = await _connect(host, target, describe)
            if server is None:
                group.cancel_scope.cancel()
                return EXIT_FAILURE
            connected.append(server)
            print(
                f"host-receiver: {connected_line(server)}, serving its requests, Ctrl-C to stop",
                file=sys.stderr,
            )
            await server.wait_closed()
            await end_session()
            group.cancel_scope.cancel()
    return EXIT_OK
