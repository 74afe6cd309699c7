"""The command-line options every command that talks to a server shares, and its usage errors.

:func:`add_connection_options` (the server, its transport, auth, hooks,
limits, protocol), :func:`add_protocol_options`, and :func:`usage_error`:
exit 2 with argparse's usage line.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from host_receiver.cli._auth import add_auth_options
from host_receiver.cli._fleet import add_fleet_options
from host_receiver.cli._hooks import (
    EXIT_FAILURE,
    add_hook_options,
    positive_seconds,
)
from host_receiver.cli._servers import (
    add_servers_options,
)
from host_receiver.cli._store import STORE_ENV, store_option
from host_receiver.client.options import (
    AUTO,
    DEFAULT_DISCOVER_TIMEOUT,
    DEFAULT_INIT_TIMEOUT,
    DEFAULT_MAX_INPUT_ROUNDS,
)
from host_receiver.protocol.versions import LATEST_LEGACY_VERSION, MODERN_VERSIONS
from host_receiver.receiver import ReceiverConfig

__all__ = ["add_connection_options", "add_protocol_options", "root_uri", "usage_error"]


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
        "--connect-timeout",
        type=positive_seconds,
        default=DEFAULT_INIT_TIMEOUT,
        metavar="SECONDS",
        help="how long the server may take to answer initialize or server/discover when connecting "
        f"(default: {DEFAULT_INIT_TIMEOUT:g}; a stdio server silent on server/discover for "
        f"{DEFAULT_DISCOVER_TIMEOUT:g} s, or SECONDS when less, is taken for a legacy one)",
    )
    run.add_argument(
        "--provider",
        help="the LLM provider that serves sampling (default: the configured ones, or the offline "
        "'echo' provider when none is configured)",
    )
    run.add_argument("--model", help="the model to use (with --provider: that provider's model id)")
    add_hook_options(run)
    run.add_argument(
        "--store",
        type=store_option,
        default=os.environ.get(STORE_ENV) or "memory",  # argparse parses a text default too
        metavar="URL",
        help="where the tasks the server creates here are kept: 'memory' (the default) for this run only "
        "(the server's own tasks that a call follows: --task-store). Also a shared store, as the "
        f"store, people, audit and inbox commands take it (default: ${STORE_ENV}): sqlite:///PATH (or a "
        "path ending .db or .sqlite) or postgresql://...; with --approve web or --elicit web a host keeps "
        "its inbox's items and remembered decisions there; with either, its 2026-07-28 calls whose input "
        "rounds wait, for 'calls resume' (docs/fleet.md)",
    )
    add_fleet_options(run)
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


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive whole number")
    return value


def usage_error(args: argparse.Namespace, message: str) -> int:
    """Print ``message`` as the command's usage error; the exit code."""
    print(f"host-receiver {args.command_name}: {message}", file=sys.stderr)
    return EXIT_FAILURE
