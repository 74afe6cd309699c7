"""The ``host-receiver`` command: a host for trying any MCP server (the application, not the library).

Subcommands: ``run`` (:mod:`._run`); ``tools``, ``resources``, ``prompts``, ``read``, ``prompt``,
``call`` (:mod:`._discover`, with ``run``'s options); ``decisions`` (:mod:`._decisions`);
``servers`` (:mod:`._servers`, the servers file ``--server NAME`` reads);
``providers`` (:mod:`providers.cli`), ``auth`` (:mod:`._auth`), ``store``, ``people``,
``audit``, ``inbox`` (:mod:`._store`, the shared store), ``demo`` (:mod:`.demo`). A
server command may come last, after ``--``, on every command that talks to a server.
What ``run`` and ``demo`` share is :mod:`._hooks`,
the interactive terminal is :mod:`.terminal`. Nothing in ``host_receiver``
outside this package imports it, and its extra dependencies
(``prompt_toolkit``, ``tomli-w``) come with ``pip install 'host-receiver[cli]'``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

from host_receiver.cli._auth import add_auth_command
from host_receiver.cli._calls import add_calls_command
from host_receiver.cli._decisions import add_decisions_command
from host_receiver.cli._discover import add_discovery_commands
from host_receiver.cli._hooks import (
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_TOOL_ERROR,
    add_hook_options,
    build_hooks,
    describe_error,
    interactive,
    open_console,
    resolve_hooks,
    uses_terminal,
)
from host_receiver.cli._run import add_run_command, run_command
from host_receiver.cli._servers import LAUNCHERS, add_servers_command, server_name
from host_receiver.cli._store import add_store_commands
from host_receiver.cli._tasks import add_tasks_command
from host_receiver.cli._telemetry import exporting
from host_receiver.cli.demo import add_demo_command
from host_receiver.client.host import tune_gc_for_serving
from host_receiver.sanitize import SafeRecords
from providers.cli import add_providers_command

__all__ = [
    "EXIT_FAILURE",
    "EXIT_OK",
    "EXIT_TOOL_ERROR",
    "LAUNCHERS",
    "add_hook_options",
    "build_hooks",
    "build_parser",
    "describe_error",
    "interactive",
    "main",
    "open_console",
    "parse_command_line",
    "resolve_hooks",
    "run_command",
    "server_name",
    "uses_terminal",
]


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: global options and every subcommand."""
    parser = argparse.ArgumentParser(
        prog="host-receiver",
        description="An MCP host that serves servers' sampling, elicitation and roots requests: "
        "as tasks when a 2025-11-25 server asks, in input rounds and tasks of 2026-07-28 servers.",
    )
    parser.add_argument("--version", action="version", version=f"host-receiver {_version()}")
    parser.add_argument(
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="how much to log on stderr (default: WARNING; INFO shows the task audit log)",
    )
    commands = parser.add_subparsers(dest="command_name", metavar="COMMAND", required=True)
    add_run_command(commands)
    add_discovery_commands(commands)
    add_decisions_command(commands)
    add_tasks_command(commands)
    add_calls_command(commands)
    add_servers_command(commands)
    add_providers_command(commands)
    add_auth_command(commands)
    add_store_commands(commands)
    add_demo_command(commands)
    return parser


def _version() -> str:
    try:
        return version("host-receiver")
    except PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown"


def parse_command_line(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse ``argv``; what follows the first ``--`` is the server command, whatever the options."""
    argv = list(argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    args, unknown = parser.parse_known_args(argv[:cut])
    if unknown:  # as parse_args says it, a URL's secrets left out (a channel URL out of its place)
        shown = [f"{a.split('://', 1)[0][:20]}://…" if "://" in a else a for a in unknown]
        parser.error(f"unrecognized arguments: {' '.join(shown)}")
    if cut == len(argv):
        return args
    if "server_command" not in args:
        parser.error(f"unrecognized arguments: {' '.join(argv[cut:])}")
    args.server_command = argv[cut + 1 :]
    return args


def main(argv: Sequence[str] | None = None) -> None:
    """The console script: parse, configure logging to stderr, run the subcommand, exit."""
    parser = build_parser()
    args = parse_command_line(parser, sys.argv[1:] if argv is None else argv)
    logging.basicConfig(
        level=getattr(logging, args.log_level),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    for handler in logging.getLogger().handlers:  # third-party records too: nothing raw on stderr
        handler.addFilter(SafeRecords())
    if args.log_level != "DEBUG":  # one line per HTTP request is debugging detail
        for chatty in ("httpx", "httpcore"):
            logging.getLogger(chatty).setLevel(logging.WARNING)
    tune_gc_for_serving()
    try:
        with exporting(os.environ):
            code = args.func(args)
    except KeyboardInterrupt:
        code = EXIT_OK
    raise SystemExit(code)
