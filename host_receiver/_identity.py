"""Who a server is: the identity remembered decisions and kept tasks are matched on.

A stdio server is its resolved executable, every argument, the working
directory and the SHA-256 of the file it runs; an HTTP server is its URL's
origin, path and query. Computed from the real command or URL, never read
from a store. In the base: imports nothing of host-receiver.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

__all__ = ["http_identity", "run_file", "stdio_identity", "unhashed"]


def stdio_identity(
    command: Sequence[str], cwd: str | os.PathLike[str] | None = None, *, hashed: bool = True
) -> str:
    """Who a stdio server is: its resolved executable, all its arguments, the working directory,
    and the SHA-256 of the file it runs (:func:`run_file`; ``hashed=False``: without it, and
    without reading the file, as a task store keeps it)."""
    program = os.path.abspath(shutil.which(command[0]) or command[0])
    directory = Path(cwd if cwd is not None else os.getcwd()).resolve()
    if not hashed:
        return f"{shlex.join([program, *command[1:]])} (in {directory})"
    kind, path = run_file(program, command[1:], directory)
    try:
        with path.open("rb") as file:
            digest = f"{kind} sha256:{hashlib.file_digest(file, 'sha256').hexdigest()[:16]}"
    except OSError:
        digest = f"{kind} unreadable"
    return f"{shlex.join([program, *command[1:]])} (in {directory}) [{digest}]"


def run_file(program: str, arguments: Sequence[str], directory: Path) -> tuple[str, Path]:
    """The file a stdio server runs: the first argument that names an existing file (its script,
    as in ``python srv.py``), else the executable; with ``"script"`` or ``"executable"``."""
    for argument in arguments:
        if argument.startswith("-"):
            continue
        candidate = directory / argument
        if candidate.is_file():
            return "script", candidate
    return "executable", Path(program)


def http_identity(url: str) -> str:
    """Who an HTTP server is: its URL's origin, path and query (no user info or fragment)."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    origin = f"{parts.scheme.lower()}://{host}" + (f":{parts.port}" if parts.port is not None else "")
    return origin + (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def unhashed(identity: str) -> str:
    """``identity`` without the hash of the file it runs: the same command, whatever the file holds."""
    head, sep, tail = identity.rpartition(" [")
    return head if sep and tail.endswith("]") and " (in " in head else identity
