"""Durable remote tasks in the shared store (``--store``): :class:`SharedRemoteTaskStore`.

The same records and rules as :class:`~host_receiver.client.remote_tasks.store.RemoteTaskStore`
(``--task-store PATH``, whose SQLite table has the same columns), kept in the ``remote_tasks``
table of a shared store (SQLite or PostgreSQL; docs/fleet.md), so that any host of the fleet
can list, resume or cancel a task another one followed. The store is the one given (open), or
the URL's, opened for each operation (the ``tasks`` commands). With the store unreachable, a
task a call follows is followed in memory only (one warning), so the call goes on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import fields
from typing import Any, TypeVar

from host_receiver.client.remote_tasks.store import DamagedTask, RemoteTaskStore, StoredTask
from host_receiver.errors import StoreUnreachable
from host_receiver.sanitize import safe_logger
from host_receiver.store import Store, StoredRemoteTask, StoreUrl, open_store

__all__ = ["SharedRemoteTaskStore"]

logger = safe_logger(__name__)

T = TypeVar("T")


class SharedRemoteTaskStore(RemoteTaskStore):
    """The servers' tasks this host follows, in the shared store ``url`` (or ``store``, open)."""

    def __init__(self, url: StoreUrl, store: Store | None = None) -> None:
        super().__init__(url.shown)  # ``path``: only shown, in messages
        self.url = url
        self._store = store

    async def _with(self, work: Callable[[Store], Awaitable[T]]) -> T:
        if self._store is not None:
            return await work(self._store)
        async with open_store(self.url) as store:
            return await work(store)

    async def add(self, task: StoredTask) -> None:
        """Keep ``task`` (a task already kept, as when resumed, keeps its record)."""
        record = StoredRemoteTask(**_fields_of(task))
        try:
            await self._with(lambda store: store.keep_remote_task(record))
        except StoreUnreachable as exc:
            logger.warning("the server's task %s is followed in memory only: %s", task.id, exc)

    async def remove(self, task_id: str) -> None:
        """Forget the task whose short id is ``task_id`` (nothing if none)."""
        try:
            await self._with(lambda store: store.forget_remote_task(task_id))
        except StoreUnreachable as exc:
            logger.warning("the server's task %s stays listed in the store: %s", task_id, exc)

    async def read(self) -> tuple[list[StoredTask], list[DamagedTask]]:
        """Every kept task, oldest first (the store keeps only rows it wrote: none is damaged)."""
        rows = await self._with(lambda store: store.remote_tasks())
        return [StoredTask(**_fields_of(row)) for row in rows], []


def _fields_of(record: StoredTask | StoredRemoteTask) -> dict[str, Any]:
    """The fields a kept task has in both records (the store's adds its lease)."""
    return {f.name: getattr(record, f.name) for f in fields(StoredTask)}
