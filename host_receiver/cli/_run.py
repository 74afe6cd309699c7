"""``host-receiver run``: connect to one MCP server and serve its requests.

(About 420 lines, one idea: the options every command that talks to a server
shares, and the one way they become a connection that serves it.)

``host-receiver run [OPTIONS] -- COMMAND [ARG...]`` starts a stdio server;
``host-receiver run [OPTIONS] --url URL`` connects to a Streamable HTTP one.
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
import json
import logging
import shlex
import signal
import sys
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from host_receiver._identity import http_identity, stdio_identity
from host_receiver.cli._auth import AuthOptionsError, add_auth_options, auth_options_given, build_auth
from host_receiver.cli._hooks import (
    EXIT_FAILURE,
    EXIT_OK,
    InboxUnavailable,
    add_hook_options,
    build_hooks,
    describe_error,
    describe_server,
    open_console,
    open_inbox,
    resolve_hooks,
    uses_terminal,
)
from host_receiver.cli._servers import (
    ServerEntry,
    add_servers_options,
    find_server,
    server_environment,
    server_name,
)
from host_receiver.cli._show import (
    add_task_option,
    call_and_print,
    connected_line,
    print_stderr_tail,
    remote_task_store,
)
from host_receiver.client.host import Host, ServerConnection
from host_receiver.client.options import AUTO, DEFAULT_MAX_INPUT_ROUNDS, ConnectionOptions
from host_receiver.errors import ProviderError
from host_receiver.protocol.versions import LATEST_LEGACY_VERSION, MODERN_VERSIONS
from host_receiver.receiver import Receiver, ReceiverConfig
from host_receiver.receiver.tasks.store import MemoryTaskStore, TaskStore
from host_receiver.sanitize import safe_logger
from host_receiver.transports.base import Transport
from host_receiver.transports.http import HttpTransport
from host_receiver.transports.stdio import StdioTransport
from providers import build_registry

__all__ = [
    "Target",
    "add_connection_options",
    "add_run_command",
    "json_object",
    "prepare",
    "run_command",
    "serve",
    "usage_error",
]

logger = safe_logger("host_receiver.cli")


def add_run_command(commands: Any) -> None:
    """The ``run`` subcommand, added to ``commands`` (an argparse subparsers object)."""
    run = commands.add_parser(
        "run",
        help="connect to one MCP server and serve its requests",
        description="Connect to one MCP server (a command over stdio after '--', or --url) and "
        "serve its sampling and elicitation requests.",
        usage="host-receiver run [OPTIONS] -- COMMAND [ARG...]\n       host-receiver run [OPTIONS] --url URL",
    )
    add_connection_options(run)
    run.add_argument("--call", metavar="TOOL", help="call TOOL once, print its CallToolResult as JSON, exit")
    run.add_argument("--args", metavar="JSON", help="arguments for --call, as a JSON object")
    add_task_option(run)
    run.add_argument("server_command", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    run.set_defaults(func=run_command)


def add_connection_options(run: argparse.ArgumentParser) -> None:
    """What every command that talks to one server takes: the server, the protocol, the hooks."""
    run.add_argument("--url", help="the server's URL: its Streamable HTTP (or 2024-11-05 HTTP+SSE) endpoint")
    add_servers_options(run)
    run.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME:VALUE",
        help="an HTTP header to send with --url (repeatable)",
    )
    run.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME[=VALUE]",
        help="an environment variable for a stdio server (repeatable): NAME alone copies this "
        "environment's value, the way to pass a secret (export it, then --env NAME); NAME=VALUE sets "
        "it, but the value is on the command line, where ps shows it to every user of the machine and "
        "the shell's history keeps it. The server gets only these and the few variables a process "
        "needs (PATH, HOME, locale, temporary directory): provider keys and other secrets are not "
        "passed unless named",
    )
    run.add_argument(
        "--name", help="the server's name in prompts and logs (default: its own, or its command)"
    )
    add_protocol_options(run)
    run.add_argument(
        "--provider",
        help="the LLM provider that serves sampling (default: the configured ones, or the offline "
        "'echo' provider when none is configured)",
    )
    run.add_argument("--model", help="the model to use (with --provider: that provider's model id)")
    add_hook_options(run)
    run.add_argument(
        "--store",
        choices=["memory"],
        default="memory",
        help="where tasks are kept (default: memory)",
    )
    defaults = ReceiverConfig()
    run.add_argument(
        "--max-active-tasks",
        type=_positive_int,
        default=defaults.max_active_tasks,
        metavar="N",
        help=f"tasks the server may have working at once (default: {defaults.max_active_tasks})",
    )
    run.add_argument(
        "--max-stored-tasks",
        type=_positive_int,
        default=defaults.max_stored_tasks,
        metavar="N",
        help="tasks kept for the server at once, finished ones until their ttl ends "
        f"(default: {defaults.max_stored_tasks})",
    )
    add_auth_options(run)


def add_protocol_options(run: argparse.ArgumentParser) -> None:
    """``--protocol``, ``--max-input-rounds``, ``--no-tasks-extension``, ``--root``."""
    run.add_argument(
        "--protocol",
        choices=[AUTO, *MODERN_VERSIONS, LATEST_LEGACY_VERSION],
        default=AUTO,
        help="the MCP protocol to speak: 'auto' probes with server/discover and falls back to the "
        f"initialize handshake of legacy servers (default); {MODERN_VERSIONS[0]} only; or "
        f"{LATEST_LEGACY_VERSION} (the handshake) only",
    )
    run.add_argument(
        "--max-input-rounds",
        type=_positive_int,
        default=DEFAULT_MAX_INPUT_ROUNDS,
        metavar="N",
        help="input rounds (input_required answers) one request may take before it is given up "
        f"(default: {DEFAULT_MAX_INPUT_ROUNDS})",
    )
    run.add_argument(
        "--no-tasks-extension",
        dest="tasks_extension",
        action="store_false",
        help="do not declare the tasks extension (io.modelcontextprotocol/tasks) to modern servers",
    )
    run.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="PATH",
        help="a directory to offer the server as a root (roots/list; repeatable; a file:// URI works too)",
    )


def root_uri(text: str) -> str:
    """A ``--root`` as a ``file://`` URI: URIs as they are, paths made absolute."""
    return text if text.startswith("file://") else Path(text).expanduser().resolve().as_uri()


@dataclass(frozen=True, slots=True)
class Target:
    """The one server a command talks to: how to reach it, its name, and who it really is."""

    transport: Transport
    name: str
    #: The key remembered decisions are kept under (:func:`host_receiver._identity.stdio_identity`).
    identity: str
    #: Where it runs, as the terminal's screens show it in small print: its command line or URL.
    where: str


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
        call = partial(call_and_print, args.call, arguments, as_json=True, task=args.task or None)
        return anyio.run(serve, args, target, call)
    return anyio.run(serve, args, target, None)


def json_object(text: str) -> dict[str, Any] | str:
    """``--args``: a JSON object, or what is wrong with it."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"--args is not valid JSON: {exc}"
    return value if isinstance(value, dict) else "--args must be a JSON object"


def prepare(args: argparse.Namespace) -> Target | int:
    """The server the options name, with the hooks resolved; or the exit code of a usage error."""
    command = list(args.server_command)
    if command and command[0] == "--":
        command = command[1:]
    url, entry = args.url, ServerEntry()
    if args.server is not None:
        if command or url:
            return usage_error(args, "give --server NAME, '-- COMMAND [ARG...]' or '--url URL' (one of them)")
        found = find_server(args)
        if isinstance(found, str):
            return usage_error(args, found)
        entry, command, url = found, list(found.command), found.url
    elif bool(command) == bool(url):
        return usage_error(args, "give either '-- COMMAND [ARG...]' or '--url URL' (exactly one)")
    problem = resolve_hooks(args)
    if problem is not None:
        return usage_error(args, problem)
    headers = dict(entry.headers)
    for header in args.header:
        name, sep, value = header.partition(":")
        if not sep or not name.strip():
            return usage_error(args, f"--header {header!r} is not NAME:VALUE")
        headers[name.strip()] = value.strip()
    environment = server_environment(args.env)
    if isinstance(environment, str):
        return usage_error(args, environment)
    default_name = args.name or args.server
    if url:
        if args.env:
            return usage_error(args, "--env goes with a stdio server ('-- COMMAND'), not --url")
        try:
            auth = build_auth(args)
        except AuthOptionsError as exc:
            return usage_error(args, str(exc))
        name = default_name or url
        return Target(HttpTransport(url, headers=headers, auth=auth), name, http_identity(url), url)
    if args.header:
        return usage_error(
            args,
            "--header goes with --url (an HTTP server), not a stdio server ('-- COMMAND'); "
            "give a stdio server what it needs with --env NAME=VALUE",
        )
    given = auth_options_given(args)
    if given:
        return usage_error(
            args,
            f"{', '.join(given)} {'goes' if len(given) == 1 else 'go'} with --url (a server behind "
            "OAuth), not a stdio server ('-- COMMAND'), which takes credentials from its environment",
        )
    name = default_name or server_name(command)
    env = {**entry.env, **environment}
    transport = StdioTransport(command[0], command[1:], env=env, cwd=entry.cwd, name=name)
    return Target(transport, name, stdio_identity(command, entry.cwd), shlex.join(command))


async def serve(
    args: argparse.Namespace, target: Target, body: Callable[[ServerConnection], Awaitable[int]] | None
) -> int:
    """Connect to ``target`` with the hooks ``args`` select; run ``body`` (None: serve until the end)."""
    try:
        registry = build_registry(provider=args.provider, model=args.model)
        await registry.open()  # the models of entries that list none, from their APIs
    except ProviderError as exc:
        print(f"host-receiver: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    async with registry, AsyncExitStack() as stack:
        console = await stack.enter_async_context(open_console()) if uses_terminal(args) else None
        try:
            inbox = await stack.enter_async_context(open_inbox(args))
        except InboxUnavailable as exc:
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
                    task_store=remote_task_store(args),
                ),
            )
        )
        describe = partial(describe_server, where=target.where, inbox=inbox, console=console, name=args.name)
        if body is None:
            return await _serve_until_closed(host, target, describe)
        server = await _connect(host, target, describe)
        if server is None:
            return EXIT_FAILURE
        try:
            code = await body(server)
            if code == EXIT_FAILURE and server.closed:  # the server went away: its last words may say why
                print_stderr_tail(target.name, target.transport)
            return code
        finally:
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
        print(f"host-receiver: could not connect to {target.name}: {describe_error(exc)}", file=sys.stderr)
        print_stderr_tail(target.name, target.transport)
        return None
    finally:
        if stdio is not None:
            stdio.stderr_level = level
    describe(server)
    return server


async def _serve_until_closed(host: Host, target: Target, describe: Describe) -> int:
    # Listen for signals before connecting, so that one arriving just after the
    # handshake is not lost (it would kill the process with the default action).
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with anyio.create_task_group() as group:
            connected: list[ServerConnection] = []

            async def stop_on_signal() -> None:
                async for _ in signals:
                    logger.info("interrupted: closing the connection to %s", target.name)
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
            group.cancel_scope.cancel()
    return EXIT_OK


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive whole number")
    return value


def usage_error(args: argparse.Namespace, message: str) -> int:
    """Print ``message`` as the command's usage error; the exit code."""
    print(f"host-receiver {args.command_name}: {message}", file=sys.stderr)
    return EXIT_FAILURE
