"""What the options of a command name: the server to connect to, as a :class:`Target`.

:func:`prepare` reads the options (``--server NAME``, ``-- COMMAND``,
``--url URL``, headers, environment, auth) into the transport to use, the
server's name, and its identity (:mod:`host_receiver._identity`), which
remembered decisions and kept tasks are matched on; a usage error is exit 2.
"""

from __future__ import annotations

import argparse
import json
import shlex
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from host_receiver._identity import http_identity, stdio_identity
from host_receiver.cli._auth import AuthOptionsError, auth_options_given, build_auth
from host_receiver.cli._hooks import (
    resolve_hooks,
)
from host_receiver.cli._options import usage_error
from host_receiver.cli._servers import (
    ServerEntry,
    find_server,
    server_environment,
    server_name,
)
from host_receiver.sanitize import safe_text
from host_receiver.transports.base import Transport
from host_receiver.transports.http import HttpTransport
from host_receiver.transports.stdio import StdioTransport

__all__ = ["Target", "json_object", "prepare"]


@dataclass(frozen=True, slots=True)
class Target:
    """The one server a command talks to: how to reach it, its name, and who it really is."""

    transport: Transport
    name: str
    #: The key remembered decisions are kept under (:func:`host_receiver._identity.stdio_identity`).
    identity: str
    #: Where it runs, as the terminal's screens show it in small print: its command line or URL.
    where: str
    #: Whether the person named it (``--name``, ``--server``); else ``name`` is its command's file
    #: name or its URL until it is connected, and then the server's own title or name.
    named: bool = False


def json_object(text: str) -> dict[str, Any] | str:
    """``--args``: a JSON object, or what is wrong with it."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"--args is not valid JSON: {exc}"
    return value if isinstance(value, dict) else "--args must be a JSON object"


def _url_problem(url: str) -> str | None:
    """Why ``url`` is no http(s) URL (the whole value named, with the likely fix), or None."""
    parts = urlsplit(url)
    if parts.scheme.lower() in ("http", "https") and parts.netloc:
        return None
    shown = safe_text(url)
    if "://" not in url:
        return f"--url {shown!r} is not an http(s) URL; did you mean 'http://{shown}'?"
    return f"--url {shown!r} is not an http(s) URL (http://HOST[:PORT]/PATH or https://...)"


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
        return usage_error(
            args, "give either '-- COMMAND [ARG...]', '--url URL' or '--server NAME' (exactly one)"
        )
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
        problem = _url_problem(url)
        if problem is not None:
            return usage_error(args, problem)
        if args.env:
            return usage_error(args, "--env goes with a stdio server ('-- COMMAND'), not --url")
        try:
            auth = build_auth(args)
        except AuthOptionsError as exc:
            return usage_error(args, str(exc))
        name = default_name or url
        http = HttpTransport(url, headers=headers, auth=auth)
        return Target(http, name, http_identity(url), url, named=bool(default_name))
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
    identity = stdio_identity(command, entry.cwd)
    return Target(transport, name, identity, shlex.join(command), named=bool(default_name))
