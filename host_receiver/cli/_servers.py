"""How a command's server is named: the servers file (``mcpServers`` format), launchers, ``--env``.

Rules:

- The file is ``--servers FILE``, else ``servers.json`` in host-receiver's
  config directory (:func:`host_receiver.paths.user_config_dir`). It is a JSON
  object whose ``mcpServers`` (or VS Code's ``servers``) maps a name to a
  server: ``command`` with optional ``args``, ``env`` and ``cwd`` (a stdio
  server), or ``url`` with optional ``headers`` (Streamable HTTP). Other keys
  (``type``, ``disabled``, ...) are ignored.
- ``--server NAME`` names one in place of ``--url`` or ``-- COMMAND``. A
  server's ``env`` goes to that server only, with the variables ``--env``
  adds; ``headers`` go with ``--header``'s. Its name is NAME unless ``--name``.
- A stdio server's default name is its script or package for a launcher
  (:data:`LAUNCHERS`), else the program's name (:func:`server_name`).
- ``host-receiver servers`` lists the file: each name and its command or URL,
  and the names (never the values) of its ``env`` and ``headers``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from host_receiver.cli._hooks import EXIT_FAILURE, EXIT_OK
from host_receiver.paths import user_config_dir
from host_receiver.sanitize import safe_text

__all__ = [
    "LAUNCHERS",
    "ServerEntry",
    "add_servers_command",
    "add_servers_options",
    "find_server",
    "server_environment",
    "server_name",
    "servers_path",
]


@dataclass(frozen=True, slots=True)
class ServerEntry:
    """One server of the file: a command (stdio) or a URL (HTTP)."""

    command: tuple[str, ...] = ()
    url: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None


def add_servers_options(parser: argparse.ArgumentParser) -> None:
    """``--server NAME`` and ``--servers FILE``."""
    parser.add_argument("--server", metavar="NAME", help="a server of the servers file, by name")
    parser.add_argument(
        "--servers",
        metavar="FILE",
        help="the servers file, in the mcpServers format of Claude Desktop, Cursor and VS Code "
        "(default: servers.json in host-receiver's config directory)",
    )


def add_servers_command(commands: Any) -> None:
    """The ``servers`` subcommand, added to ``commands`` (an argparse subparsers object)."""
    servers = commands.add_parser(
        "servers",
        help="list the servers of the servers file (for --server NAME)",
        description="List the servers of the servers file (mcpServers format): each name, its "
        "command or URL, and the names of its env variables and headers (never their values).",
    )
    servers.add_argument(
        "--servers", metavar="FILE", help="the servers file (default: in the config directory)"
    )
    servers.set_defaults(func=_list)


def servers_path(args: argparse.Namespace) -> Path:
    """The servers file ``args`` name, else the one in the config directory."""
    return Path(args.servers) if args.servers else user_config_dir() / "servers.json"


def load_servers(path: Path) -> dict[str, ServerEntry] | str:
    """Every server of the file at ``path``, or what is wrong with it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return f"no servers file at {path} (give one with --servers FILE)"
    except (OSError, ValueError) as exc:
        return f"cannot read the servers file {path}: {exc}"
    table = data.get("mcpServers", data.get("servers")) if isinstance(data, dict) else None
    if not isinstance(table, dict):
        return f"the servers file {path} has no 'mcpServers' object"
    servers: dict[str, ServerEntry] = {}
    for name, spec in table.items():
        entry = _entry(spec)
        if isinstance(entry, str):
            return f"{path}: server {name!r}: {entry}"
        servers[name] = entry
    return servers


def find_server(args: argparse.Namespace) -> ServerEntry | str:
    """The server ``--server`` names, or what is wrong."""
    path = servers_path(args)
    servers = load_servers(path)
    if isinstance(servers, str):
        return servers
    if args.server not in servers:
        known = ", ".join(sorted(servers)) or "none"
        return f"no server {args.server!r} in {path} (it has: {known})"
    return servers[args.server]


def _entry(spec: Any) -> ServerEntry | str:
    if not isinstance(spec, dict):
        return "is not an object"
    env, headers = spec.get("env") or {}, spec.get("headers") or {}
    if not _strings(env) or not _strings(headers):
        return "'env' and 'headers' must map names to strings"
    if isinstance(spec.get("url"), str) and "command" not in spec:
        return ServerEntry(url=spec["url"], headers=dict(headers))
    command, args = spec.get("command"), spec.get("args") or []
    if not isinstance(command, str) or not command or not isinstance(args, list) or not _strings(args):
        return "needs 'command' (with 'args', a list of strings) or 'url'"
    cwd = spec.get("cwd")
    return ServerEntry(command=(command, *args), env=dict(env), cwd=cwd if isinstance(cwd, str) else None)


def _strings(value: Any) -> bool:
    items = value.values() if isinstance(value, dict) else value
    return isinstance(value, dict | list) and all(isinstance(v, str) for v in items)


def _list(args: argparse.Namespace) -> int:
    servers = load_servers(servers_path(args))
    if isinstance(servers, str):
        print(f"host-receiver servers: {servers}", file=sys.stderr)
        return EXIT_FAILURE
    for name, entry in sorted(servers.items()):
        where = entry.url or shlex.join(entry.command)
        extra = [f"env: {', '.join(sorted(entry.env))}"] if entry.env else []
        extra += [f"headers: {', '.join(sorted(entry.headers))}"] if entry.headers else []
        extra += [f"in {entry.cwd}"] if entry.cwd else []
        print(safe_text(f"{name}  {where}" + (f"  ({'; '.join(extra)})" if extra else ""), None))
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
