"""Durable remote tasks: the servers' tasks this host follows, kept in SQLite until they end.

A connection given a :class:`RemoteTaskStore` (``ConnectionOptions.task_store``,
``--task-store PATH``) records every server task it follows for a
``tools/call`` (either era) before it polls it, and removes the record once
the task is terminal and its outcome delivered to the caller. A host killed
meanwhile leaves the record, and ``host-receiver tasks resume ID`` (or
``ClientConnection.resume_task``) follows the task to its end.

Rules:

- A record holds the server's identity (:func:`~host_receiver.policies.stdio_identity`
  or :func:`~host_receiver.policies.http_identity`), how to reach it again
  (a stdio server's command line, working directory and the *names* of the
  environment variables it was given; an HTTP server's URL without its user
  info: never an environment value, a header or a credential; a command's
  arguments are kept as given, as the consent identity keeps them), the
  protocol version spoken, the task id, the call (tool name and arguments),
  the task's ttl and when it was created (wall clock). The file is made
  readable by its owner only.
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
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import anyio
import anyio.to_thread

from host_receiver.errors import ConnectionClosed, TransportError
from host_receiver.policies import http_identity, stdio_identity
from host_receiver.transports.base import Transport
from host_receiver.transports.http import HttpTransport
from host_receiver.transports.sse import SseTransport
from host_receiver.transports.stdio import StdioTransport

__all__ = ["RemoteTaskStore", "StoredTask", "server_address"]

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


def _identity(address: dict[str, Any]) -> str:
    if "url" in address:
        return http_identity(address["url"])
    return stdio_identity(address["command"], address["cwd"])


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
        identity = _identity(address)
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


class RemoteTaskStore:
    """The servers' tasks this host follows, in the SQLite file ``path`` (made on first use)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def _run(self, work: Callable[[sqlite3.Connection], T]) -> Awaitable[T]:
        def in_thread() -> T:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))  # owner-only when new
            connection = sqlite3.connect(self.path, timeout=10)
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
        """Every kept task, oldest first."""
        rows = await self._run(
            lambda db: db.execute("SELECT * FROM remote_tasks ORDER BY created").fetchall()
        )
        return [
            StoredTask(
                id=row[0],
                identity=row[1],
                address=json.loads(row[2]),
                version=row[3],
                task_id=row[4],
                tool=row[5],
                arguments=None if row[6] is None else json.loads(row[6]),
                ttl_ms=row[7],
                created=row[8],
            )
            for row in rows
        ]

    async def find(self, address: dict[str, Any], task_id: str) -> StoredTask | None:
        """The kept record of the task ``task_id`` of the server at ``address``, or None."""
        return await self.get(_short_id(_identity(address), task_id))

    async def get(self, task_id: str) -> StoredTask | None:
        """The kept task whose short id is ``task_id``, or None."""
        return next((t for t in await self.tasks() if t.id == task_id), None)

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
