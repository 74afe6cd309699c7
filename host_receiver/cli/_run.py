"""``host-receiver run``: connect to one MCP server and serve its requests.

``host-receiver run [OPTIONS] -- COMMAND [ARG...]`` starts a stdio server;
``host-receiver run [OPTIONS] --url URL`` connects to a Streamable HTTP one.
A stdio server gets a minimal environment plus what ``--env`` names
(docs/security.md). Without ``--call`` it serves the server's sampling and
elicitation requests until the server closes the connection or the user
presses Ctrl-C (exit 0).
With ``--call TOOL`` it calls the tool once, prints the final ``CallToolResult``
as JSON on stdout (never an intermediate ``input_required`` or task result:
input rounds are answered and tasks followed to their end) and exits 0, or 1
when the result has ``isError`` true, or 2 when the connection, the protocol or
the call failed. Logs go to stderr, never stdout; at INFO one line says which
protocol the connection speaks. ``--protocol`` chooses it (default ``auto``:
either era).
The hooks (``--approve``, ``--elicit``) are :mod:`host_receiver.cli._hooks`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from host_receiver.cli._auth import AuthOptionsError, add_auth_options, auth_options_given, build_auth
from host_receiver.cli._hooks import (
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_TOOL_ERROR,
    InboxUnavailable,
    add_hook_options,
    build_hooks,
    describe_error,
    describe_server,
    open_console,
    open_inbox,
    resolve_hooks,
    safe_json,
    uses_terminal,
)
from host_receiver.errors import ProviderError
from host_receiver.host import Host, ServerConnection
from host_receiver.options import AUTO, DEFAULT_MAX_INPUT_ROUNDS, ConnectionOptions
from host_receiver.protocol.versions import LATEST_LEGACY_VERSION, MODERN_VERSIONS
from host_receiver.receiver import Receiver, ReceiverConfig
from host_receiver.sanitize import safe_logger
from host_receiver.tasks.store import MemoryTaskStore, TaskStore
from host_receiver.transports.base import Transport
from host_receiver.transports.http import HttpTransport
from host_receiver.transports.stdio import StdioTransport
from providers import build_registry

if TYPE_CHECKING:
    from host_receiver.web import WebInbox

__all__ = ["LAUNCHERS", "add_run_command", "run_command", "server_environment", "server_name"]

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
    run.add_argument("--url", help="the Streamable HTTP endpoint of the server")
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
    run.add_argument("--name", help="the server's name in prompts and logs (default: the command or host)")
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
    run.add_argument("--call", metavar="TOOL", help="call TOOL once, print its CallToolResult as JSON, exit")
    run.add_argument("--args", metavar="JSON", help="arguments for --call, as a JSON object")
    add_auth_options(run)
    run.add_argument("server_command", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    run.set_defaults(func=run_command)


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


def run_command(args: argparse.Namespace) -> int:
    """``host-receiver run``: check the arguments, then serve."""
    command = list(args.server_command)
    if command and command[0] == "--":
        command = command[1:]
    if bool(command) == bool(args.url):
        return _usage_error("give either '-- COMMAND [ARG...]' or '--url URL' (exactly one)")
    problem = resolve_hooks(args)
    if problem is not None:
        return _usage_error(problem)
    arguments: dict[str, Any] = {}
    if args.args is not None:
        if args.call is None:
            return _usage_error("--args goes with --call")
        try:
            arguments = json.loads(args.args)
        except json.JSONDecodeError as exc:
            return _usage_error(f"--args is not valid JSON: {exc}")
        if not isinstance(arguments, dict):
            return _usage_error("--args must be a JSON object")
    headers = {}
    for header in args.header:
        name, sep, value = header.partition(":")
        if not sep or not name.strip():
            return _usage_error(f"--header {header!r} is not NAME:VALUE")
        headers[name.strip()] = value.strip()
    environment = server_environment(args.env)
    if isinstance(environment, str):
        return _usage_error(environment)
    transport: Transport
    if args.url:
        if args.env:
            return _usage_error("--env goes with a stdio server ('-- COMMAND'), not --url")
        try:
            auth = build_auth(args)
        except AuthOptionsError as exc:
            return _usage_error(str(exc))
        transport = HttpTransport(args.url, headers=headers, auth=auth)
        name = args.name or args.url
    else:
        if args.header:
            return _usage_error(
                "--header goes with --url (an HTTP server), not a stdio server ('-- COMMAND'); "
                "give a stdio server what it needs with --env NAME=VALUE"
            )
        given = auth_options_given(args)
        if given:
            return _usage_error(
                f"{', '.join(given)} {'goes' if len(given) == 1 else 'go'} with --url (a server behind "
                "OAuth), not a stdio server ('-- COMMAND'), which takes credentials from its environment"
            )
        name = args.name or server_name(command)
        transport = StdioTransport(command[0], command[1:], env=environment, name=name)
    return anyio.run(_run, args, transport, name, arguments)


async def _run(args: argparse.Namespace, transport: Transport, name: str, arguments: dict[str, Any]) -> int:
    try:
        registry = build_registry(provider=args.provider, model=args.model)
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
        sampling, elicitation = build_hooks(args, registry, console, inbox=inbox)
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
                ),
            )
        )
        return await _serve(args, host, transport, name, arguments, inbox)


async def _serve(
    args: argparse.Namespace,
    host: Host,
    transport: Transport,
    name: str,
    arguments: dict[str, Any],
    inbox: WebInbox | None,
) -> int:
    if args.call is not None:
        try:
            server = await host.connect(name, transport)
        except Exception as exc:
            print(f"host-receiver: could not connect to {name}: {describe_error(exc)}", file=sys.stderr)
            return EXIT_FAILURE
        describe_server(inbox, server)
        try:
            result = await server.call_tool(args.call, arguments)
        except Exception as exc:
            print(f"host-receiver: {args.call} failed: {describe_error(exc)}", file=sys.stderr)
            return EXIT_FAILURE
        finally:
            await server.close()
        print(safe_json(result.model_dump()))
        return EXIT_TOOL_ERROR if result.is_error is True else EXIT_OK
    # Listen for signals before connecting, so that one arriving just after the
    # handshake is not lost (it would kill the process with the default action).
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with anyio.create_task_group() as group:
            connected: list[ServerConnection] = []

            async def stop_on_signal() -> None:
                async for _ in signals:
                    logger.info("interrupted: closing the connection to %s", name)
                    for server in connected:
                        await server.close()
                    group.cancel_scope.cancel()
                    return

            group.start_soon(stop_on_signal)
            try:
                server = await host.connect(name, transport)
            except Exception as exc:
                print(f"host-receiver: could not connect to {name}: {describe_error(exc)}", file=sys.stderr)
                group.cancel_scope.cancel()
                return EXIT_FAILURE
            describe_server(inbox, server)
            connected.append(server)
            await server.wait_closed()
            group.cancel_scope.cancel()
    return EXIT_OK


#: Programs that run a server given as their first argument, not servers themselves.
LAUNCHERS = frozenset({"python", "python3", "node", "deno", "bun", "npx", "uv", "uvx", "pipx", "java"})


def server_name(command: Sequence[str]) -> str:
    """A name for a stdio server: its script or package for a launcher, else the program's name.

    ``python tools/server.py`` is ``server.py`` and ``npx -y @acme/notes`` is ``notes``,
    so that remembered decisions for one server do not cover every server run alike.
    """
    program = os.path.basename(command[0])
    if program.rstrip("0123456789.") in LAUNCHERS or program in LAUNCHERS:
        for arg in command[1:]:
            if not arg.startswith("-") and arg != "run":
                return os.path.basename(arg) if os.sep in arg else arg
    return program


def server_environment(options: Sequence[str]) -> dict[str, str] | str:
    """The variables ``--env`` names (beyond the minimal environment), or what is wrong with one."""
    named: dict[str, str] = {}
    for option in options:
        name, sep, value = option.partition("=")
        if not name or "\0" in option:
            return f"--env {option!r} is not NAME or NAME=VALUE"
        if not sep:
            if name not in os.environ:
                return f"--env {name}: {name} is not set here; export it first (NAME=VALUE: not for secrets)"
            value = os.environ[name]
        named[name] = value
    return named


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive whole number")
    return value


def _usage_error(message: str) -> int:
    print(f"host-receiver run: {message}", file=sys.stderr)
    return EXIT_FAILURE
