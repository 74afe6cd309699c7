"""Durable remote tasks: the servers' tasks this host follows, kept in SQLite until they end.

A connection given a :class:`RemoteTaskStore` (``ConnectionOptions.task_store``,
``--task-store PATH``) records every server task it follows for a
``tools/call`` (either era) before it polls it, and removes the record once
the task is terminal and its outcome delivered to the caller. A host killed
meanwhile leaves the record, and ``host-receiver tasks resume ID`` (or
``ClientConnection.resume_task``) follows the task to its end.

Rules:

- A record holds the server's identity (:func:`server_identity`: the
  consent identity without the file hash), how to reach it again
  (a stdio server's command line, working directory and the *names* of the
  environment variables it was given; an HTTP server's URL without its user
  info: never an environment value, a header or a credential; a command's
  arguments are kept as given, as the consent identity keeps them), the
  protocol version spoken, the task id, the call (tool name and arguments),
  the task's ttl and when it was created (wall clock). The file is made
  readable by its owner only, and one that is not the user's, or that group
  or others may use, is refused (:class:`~host_receiver.errors.UnsafeFile`,
  :func:`~host_receiver.paths.private_file_problem`): what it holds is never
  trusted to choose what the host runs (``host-receiver tasks resume`` is
  given the server, and runs that).
- A damaged record (JSON nested too deep or not JSON, a field of the wrong
  type, text that is not UTF-8) is skipped and named by :meth:`RemoteTaskStore.read`;
  the others are listed.
- The record is removed when following the task ended with its result, the
  task's error, its cancellation (by the server, or by this host, which sent
  ``tasks/cancel``), or a lost task (unknown to the server, or past its ttl).
  It stays when the connection failed under it (the server may still hold
  the task) or the process died.
- A kept task past its ttl (by the wall clock, from its creation) is removed
  without connecting (``host-receiver tasks``); a resumed one keeps counting
  its ttl from that same creation (the record's, which a resume never
  replaces; without a record, the server's ``createdAt``): the followers'
  ttl backstop gives it up when the ttl it was created with has passed,
  never later.
- Every SQLite call runs in a worker thread (``anyio.to_thread``), each on its
  own short-lived connection: the event loop never waits on the disk.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import anyio
import anyio.to_thread

from host_receiver._identity import http_identity, stdio_identity
from host_receiver.errors import ConnectionClosed, TransportError, UnsafeFile
from host_receiver.paths import private_file_problem
from host_receiver.transports.base import Transport
from host_receiver.transports.http import HttpTransport
from host_receiver.transports.sse import SseTransport
from host_receiver.transports.stdio import StdioTransport

if TYPE_CHECKING:
    from host_receiver.client.remote_tasks._modern import TaskInputs

__all__ = ["DamagedTask", "RemoteTaskStore", "StoredTask", "server_address", "server_identity"]

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS remote_tasks (
    id TEXT PRIMARY KEY,
    identity TEXT NOT NULL,
    address TEXT NOT NULL,
    version TEXT NOT NULL,
    task_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT,
    ttl_ms INTEGER,
    created REAL NOT NULL
)
"""


def server_address(transport: Transport) -> dict[str, Any] | None:
    """How to reach the server of ``transport`` again, without secrets; None when it cannot be said."""
    if isinstance(transport, StdioTransport):
        return {
            "command": [transport.command, *transport.args],
            "cwd": str(Path(transport.cwd).resolve()) if transport.cwd is not None else os.getcwd(),
            "env": sorted(transport.env),
        }
    if isinstance(transport, HttpTransport | SseTransport):
        parts = urlsplit(transport.url)
        netloc = parts.netloc.rpartition("@")[2]  # no user info
        return {"url": urlunsplit(parts._replace(netloc=netloc))}
    return None


def server_identity(address: dict[str, Any]) -> str:
    """The identity of the server at ``address``, computed from its command line and directory
    (without the hash of the file it runs, so no file is read) or its URL
    (:func:`~host_receiver._identity.stdio_identity`, ``http_identity``)."""
    if "url" in address:
        return http_identity(address["url"])
    return stdio_identity(address["command"], address["cwd"], hashed=False)


def _short_id(identity: str, task_id: str) -> str:
    return hashlib.sha256(f"{identity}\0{task_id}".encode()).hexdigest()[:10]


@dataclass(frozen=True, slots=True)
class StoredTask:
    """One server task being followed, as kept (rules in the module docstring)."""

    #: The short id ``host-receiver tasks`` shows (from the identity and the task id).
    id: str
    identity: str
    address: dict[str, Any]
    version: str
    task_id: str
    tool: str
    arguments: dict[str, Any] | None
    ttl_ms: int | None
    #: When the task was created, in seconds since the epoch.
    created: float

    @classmethod
    def new(
        cls,
        address: dict[str, Any],
        version: str,
        task_id: str,
        tool: str,
        arguments: dict[str, Any] | None,
        ttl_ms: int | None,
        *,
        created: float | None = None,
    ) -> StoredTask:
        """The record of a task created at ``created`` (wall clock; None: now)."""
        identity = server_identity(address)
        return cls(
            _short_id(identity, task_id),
            identity,
            address,
            version,
            task_id,
            tool,
            arguments,
            ttl_ms,
            time.time() if created is None else created,
        )

    def expired(self, now: float | None = None) -> bool:
        """Whether the task's ttl has passed (a task without ttl never expires)."""
        if self.ttl_ms is None:
            return False
        return (time.time() if now is None else now) >= self.created + self.ttl_ms / 1000


@dataclass(frozen=True, slots=True)
class DamagedTask:
    """A record that could not be read: its short id (as far as it reads) and what is wrong."""

    id: str
    #: SQLite's rowid of the record.
    row: int
    problem: str


def _text(value: object, field: str) -> str:
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"its {field}: not UTF-8") from None
    raise ValueError(f"its {field}: not text")


def _json(value: object, field: str) -> Any:
    try:
        return json.loads(_text(value, field))
    except RecursionError:
        raise ValueError(f"its {field}: JSON nested too deep") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"its {field}: not JSON ({exc.msg})") from None


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _address(value: Any) -> dict[str, Any]:
    if isinstance(value, dict) and isinstance(value.get("url"), str):
        return value
    if (
        isinstance(value, dict)
        and _strings(value.get("command"))
        and value["command"]
        and isinstance(value.get("cwd"), str)
        and _strings(value.get("env", []))
    ):
        return value
    raise ValueError("its address: neither a URL nor a command line, directory and names")


def _task_of(row: tuple[Any, ...]) -> StoredTask:
    """The record of one row (``rowid`` first), or ValueError naming what is wrong."""
    _, raw_id, identity, address, version, task_id, tool, arguments, ttl_ms, created = row
    loaded_arguments = None if arguments is None else _json(arguments, "arguments")
    if loaded_arguments is not None and not isinstance(loaded_arguments, dict):
        raise ValueError("its arguments: not an object")
    if ttl_ms is not None and (not isinstance(ttl_ms, int) or isinstance(ttl_ms, bool)):
        raise ValueError("its ttl: not a whole number")
    if not isinstance(created, int | float):
        raise ValueError("its creation time: not a number")
    return StoredTask(
        id=_text(raw_id, "id"),
        identity=_text(identity, "identity"),
        address=_address(_json(address, "address")),
        version=_text(version, "protocol version"),
        task_id=_text(task_id, "task id"),
        tool=_text(tool, "tool"),
        arguments=loaded_arguments,
        ttl_ms=ttl_ms,
        created=float(created),
    )


class RemoteTaskStore:
    """The servers' tasks this host follows, in the SQLite file ``path`` (made on first use)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def _run(self, work: Callable[[sqlite3.Connection], T]) -> Awaitable[T]:
        def in_thread() -> T:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))  # owner-only when new
            problem = private_file_problem(self.path, "the task store")
            if problem is not None:
                raise UnsafeFile(problem)
            connection = sqlite3.connect(self.path, timeout=10)
            connection.text_factory = bytes  # decoded field by field: a bad row is that row's problem
            try:
                with connection:
                    connection.execute(_SCHEMA)
                    return work(connection)
            finally:
                connection.close()

        return anyio.to_thread.run_sync(in_thread)

    async def add(self, task: StoredTask) -> None:
        """Keep ``task`` (a task already kept, as when resumed, keeps its record)."""
        row = (
            task.id,
            task.identity,
            json.dumps(task.address),
            task.version,
            task.task_id,
            task.tool,
            None if task.arguments is None else json.dumps(task.arguments),
            task.ttl_ms,
            task.created,
        )
        await self._run(
            lambda db: db.execute("INSERT OR IGNORE INTO remote_tasks VALUES (?,?,?,?,?,?,?,?,?)", row)
        )

    async def remove(self, task_id: str) -> None:
        """Forget the task whose short id is ``task_id`` (nothing if none)."""
        await self._run(lambda db: db.execute("DELETE FROM remote_tasks WHERE id = ?", (task_id,)))

    async def tasks(self) -> list[StoredTask]:
        """Every kept task that reads, oldest first (the damaged ones: :meth:`read`)."""
        return (await self.read())[0]

    async def read(self) -> tuple[list[StoredTask], list[DamagedTask]]:
        """Every kept task, oldest first, and every record that could not be read, by itself."""
        rows = await self._run(
            lambda db: db.execute("SELECT rowid, * FROM remote_tasks ORDER BY created").fetchall()
        )
        kept: list[StoredTask] = []
        damaged: list[DamagedTask] = []
        for row in rows:
            try:
                kept.append(_task_of(row))
            except ValueError as exc:
                raw_id = row[1]
                shown = raw_id.decode("utf-8", "replace") if isinstance(raw_id, bytes) else str(raw_id)
                damaged.append(DamagedTask(shown, row[0], str(exc)))
        return kept, damaged

    async def find(self, address: dict[str, Any], task_id: str) -> StoredTask | None:
        """The kept record of the task ``task_id`` of the server at ``address``, or None."""
        return await self.get(_short_id(server_identity(address), task_id))

    async def get(self, task_id: str) -> StoredTask | None:
        """The kept task whose short id is ``task_id``, or None."""
        return next((t for t in await self.tasks() if t.id == task_id), None)

    async def inputs(self, task: StoredTask) -> TaskInputs | None:
        """How the kept ``task``'s input requests are answered and remembered beyond this process
        (a shared store's inbox); None here: as any input request, remembered in memory."""
        return None

    async def keeping(self, task: StoredTask, follow: Callable[[], Awaitable[T]]) -> T:
        """Keep ``task`` while ``follow()`` (following it) runs; forget it as the module docstring says."""
        await self.add(task)
        try:
            outcome = await follow()
        except (ConnectionClosed, TransportError, OSError):
            raise  # the server may still hold the task: it can be resumed
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.remove(task.id)
            raise
        await self.remove(task.id)
        return outcome
