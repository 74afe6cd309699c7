"""The ``host-receiver`` command: a host for trying any MCP server.

``host-receiver run [OPTIONS] -- COMMAND [ARG...]`` starts a stdio server;
``host-receiver run [OPTIONS] --url URL`` connects to a Streamable HTTP one.
Without ``--call`` it serves the server's sampling and elicitation requests
until the server closes the connection or the user presses Ctrl-C (exit 0).
With ``--call TOOL`` it calls the tool once, prints the ``CallToolResult`` as
JSON on stdout and exits 0, or 1 when the result has ``isError`` true, or 2
when the connection or the protocol failed. Logs go to stderr, never stdout.

``--approve ask`` and ``--elicit ask`` put a person in the loop at the
terminal (prompts on stderr); they are the defaults when stdin and stderr are
terminals, otherwise sampling is refused and elicitations declined. ``ask``
remembers "session"/"always"/"never" answers per server name
(:mod:`host_receiver.policies`). ``host-receiver demo`` runs the bundled
example server (:mod:`host_receiver.demo`).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

import anyio

from host_receiver._cli_auth import AuthOptionsError, add_auth_command, add_auth_options, build_auth
from host_receiver.approval import (
    AutoApprove,
    DeclineAll,
    DenyAll,
    ElicitationUI,
    FillDefaults,
    SamplingApprover,
)
from host_receiver.handlers import ElicitationService, SamplingService
from host_receiver.host import Host, ServerConnection, tune_gc_for_serving
from host_receiver.policies import ModelAllowList, RememberDecisions
from host_receiver.protocol.errors import RpcError
from host_receiver.receiver import Receiver, ReceiverConfig
from host_receiver.tasks.store import MemoryTaskStore, TaskStore
from host_receiver.transports.base import Transport
from host_receiver.transports.http import HttpTransport
from host_receiver.transports.stdio import StdioTransport
from host_receiver.work import ElicitationHandler, SamplingHandler
from providers import ProviderError, ProviderRegistry, build_registry
from providers.cli import add_providers_command

if TYPE_CHECKING:
    from host_receiver.terminal import Console

logger = logging.getLogger("host_receiver.cli")

EXIT_OK = 0
EXIT_TOOL_ERROR = 1
EXIT_FAILURE = 2

APPROVERS: dict[str, type[AutoApprove] | type[DenyAll]] = {"auto": AutoApprove, "deny": DenyAll}
ELICITORS: dict[str, type[FillDefaults] | type[DeclineAll]] = {
    "defaults": FillDefaults,
    "decline": DeclineAll,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="host-receiver",
        description="An MCP host that serves servers' sampling and elicitation requests, "
        "as tasks when they ask (MCP 2025-11-25).",
    )
    parser.add_argument(
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="how much to log on stderr (default: WARNING; INFO shows the task audit log)",
    )
    commands = parser.add_subparsers(dest="command_name", metavar="COMMAND", required=True)
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
    run.add_argument("--name", help="the server's name in prompts and logs (default: the command or host)")
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
    add_providers_command(commands)
    add_auth_command(commands)
    # Imported here: the demo module builds on this one's helpers.
    from host_receiver.demo import add_demo_command

    add_demo_command(commands)
    return parser


def add_hook_options(
    parser: argparse.ArgumentParser, *, approve: str = "deny", elicit: str = "decline"
) -> None:
    """``--approve`` and ``--elicit``, shared by ``run`` and ``demo`` (defaults off a terminal)."""
    parser.add_argument(
        "--approve",
        choices=["ask", *sorted(APPROVERS)],
        default=None,
        help="sampling approval: 'ask' asks at the terminal (and remembers 'session', 'always' and "
        "'never' answers per server); 'auto' approves every request and sends every result; 'deny' "
        f"refuses all (default: ask on a terminal, else {approve})",
    )
    parser.add_argument(
        "--elicit",
        choices=["ask", *sorted(ELICITORS)],
        default=None,
        help="elicitation: 'ask' asks at the terminal; 'defaults' accepts form requests with every "
        "schema default filled in and declines URL requests; 'decline' declines all (default: ask "
        f"on a terminal, else {elicit})",
    )


def interactive() -> bool:
    """Whether a person can answer: stdin and stderr (where prompts go) are terminals."""
    return sys.stdin.isatty() and sys.stderr.isatty()


def resolve_hooks(args: argparse.Namespace, *, approve: str = "deny", elicit: str = "decline") -> str | None:
    """Fill in ``args.approve``/``args.elicit`` defaults; an error message if 'ask' has no terminal."""
    person = interactive()
    if args.approve is None:
        args.approve = "ask" if person else approve
    if args.elicit is None:
        args.elicit = "ask" if person else elicit
    if not person and "ask" in (args.approve, args.elicit):
        return (
            "'ask' needs a terminal on stdin and stderr; "
            "use --approve auto|deny and --elicit defaults|decline"
        )
    return None


def uses_terminal(args: argparse.Namespace) -> bool:
    return "ask" in (args.approve, args.elicit)


def build_hooks(
    args: argparse.Namespace,
    registry: ProviderRegistry,
    console: Console | None,
    *,
    approver: Callable[[SamplingApprover], SamplingApprover] = lambda a: a,
    ui: Callable[[ElicitationUI], ElicitationUI] = lambda u: u,
) -> tuple[SamplingHandler, ElicitationHandler]:
    """The sampling and elicitation handlers ``args.approve``/``args.elicit`` select.

    ``console`` is needed for 'ask'; ``approver`` and ``ui`` may wrap the hooks chosen.
    """
    if uses_terminal(args) and console is None:
        raise ValueError("'ask' needs a console")
    sampling: SamplingHandler
    person: ElicitationUI
    if args.approve == "ask" and console is not None:
        from host_receiver.terminal import TerminalApprover, terminal_sampling

        chain = approver(RememberDecisions(ModelAllowList(TerminalApprover(console))))
        sampling = terminal_sampling(registry, chain, console.activity)
    else:
        sampling = SamplingService(registry, approver(APPROVERS[args.approve]()))
    if args.elicit == "ask" and console is not None:
        from host_receiver.terminal import TerminalElicitationUI

        person = TerminalElicitationUI(console)
    else:
        person = ELICITORS[args.elicit]()
    return sampling, ElicitationService(ui(person))


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, args.log_level),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    tune_gc_for_serving()
    try:
        code = args.func(args)
    except KeyboardInterrupt:
        code = EXIT_OK
    raise SystemExit(code)


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
    transport: Transport
    if args.url:
        try:
            auth = build_auth(args)
        except AuthOptionsError as exc:
            return _usage_error(str(exc))
        transport = HttpTransport(args.url, headers=headers, auth=auth)
        name = args.name or args.url
    else:
        transport = StdioTransport(command[0], command[1:], inherit_env=True, name=args.name)
        name = args.name or server_name(command)
    return anyio.run(_run, args, transport, name, arguments)


async def _run(args: argparse.Namespace, transport: Transport, name: str, arguments: dict[str, Any]) -> int:
    try:
        registry = build_registry(provider=args.provider, model=args.model)
    except ProviderError as exc:
        print(f"host-receiver: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    async with registry, AsyncExitStack() as stack:
        console = await stack.enter_async_context(open_console()) if uses_terminal(args) else None
        sampling, elicitation = build_hooks(args, registry, console)
        store: TaskStore = MemoryTaskStore()
        config = ReceiverConfig(
            max_active_tasks=args.max_active_tasks, max_stored_tasks=args.max_stored_tasks
        )
        receiver = Receiver(sampling=sampling, elicitation=elicitation, store=store, config=config)
        host = await stack.enter_async_context(Host(receiver))
        return await _serve(args, host, transport, name, arguments)


def open_console() -> Console:
    """The terminal console (prompt_toolkit is imported only when a person is asked)."""
    from host_receiver.terminal import Console

    return Console()


async def _serve(
    args: argparse.Namespace, host: Host, transport: Transport, name: str, arguments: dict[str, Any]
) -> int:
    if args.call is not None:
        try:
            server = await host.connect(name, transport)
        except Exception as exc:
            print(f"host-receiver: could not connect to {name}: {describe_error(exc)}", file=sys.stderr)
            return EXIT_FAILURE
        try:
            result = await server.call_tool(args.call, arguments)
        except Exception as exc:
            print(f"host-receiver: {args.call} failed: {describe_error(exc)}", file=sys.stderr)
            return EXIT_FAILURE
        finally:
            await server.close()
        print(json.dumps(result, ensure_ascii=False))
        return EXIT_TOOL_ERROR if result.get("isError") is True else EXIT_OK
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
            connected.append(server)
            await server.wait_closed()
            group.cancel_scope.cancel()
    return EXIT_OK


def describe_error(exc: BaseException) -> str:
    """A one-line description of a connection or protocol failure."""
    if isinstance(exc, RpcError):
        return f"JSON-RPC error {exc.code}: {exc.message}"
    if isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        return describe_error(exc.exceptions[0])
    return str(exc) or type(exc).__name__


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


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive whole number")
    return value


def _usage_error(message: str) -> int:
    print(f"host-receiver run: {message}", file=sys.stderr)
    return EXIT_FAILURE
