"""Durable remote tasks in the shared store (``--store``): :class:`SharedRemoteTaskStore`.

The same records and rules as :class:`~host_receiver.client.remote_tasks.store.RemoteTaskStore`
(``--task-store PATH``, whose SQLite table has the same columns), kept in the ``remote_tasks``
table of a shared store (SQLite or PostgreSQL; docs/fleet.md), so that any host of the fleet
can list, resume or cancel a task another one followed. The store is the one given (open), or
the URL's, opened for each operation (the ``tasks`` commands). With the store unreachable, a
task a call follows is followed in memory only (one warning), so the call goes on.

With a :class:`~host_receiver.store.CallKeeping` (a host's open store, its ``--lease`` and its
name), following a task is done under its lease, as continuable calls are
(:mod:`host_receiver.client._kept_calls`):

- Following (the first follow, or ``tasks resume``) takes the lease ``("task", the short id)``
  by one conditional update, renews it every ``lease`` seconds, and gives it up when following
  ends; a task whose lease another process holds is refused with
  :class:`~host_receiver.errors.TaskLeased` (naming the holder and until when). A killed
  process's lease runs out after :data:`~host_receiver.store.LEASE_PERIODS` periods.
- Its ``inputRequests`` (:class:`KeptTaskInputs`) are asked with the inbox items linked to the
  task (``task:ID`` in the item's call link: no lease, so they stay pending when the host
  dies); whoever follows it next sends the answers those items were given, asks again (through
  its own hooks) for the others, and records in the store the keys sent with ``tasks/update``,
  so that no key is sent twice (a process killed between the send and the record leaves the
  key to be sent again: the server ignores a key already satisfied).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from dataclasses import fields
from typing import Any, TypeVar

import anyio

from host_receiver._concurrency import background_task_group
from host_receiver.client._input_rounds import Fulfil, fulfil_all
from host_receiver.client._kept_calls import inbox_answers, renew_lease
from host_receiver.client.remote_tasks.store import DamagedTask, RemoteTaskStore, StoredTask
from host_receiver.errors import StoreError, StoreUnreachable, TaskLeased
from host_receiver.sanitize import safe_logger
from host_receiver.store import LEASE_PERIODS, CallKeeping, Store, StoredRemoteTask, StoreUrl, open_store

__all__ = ["TASK_LEASE", "KeptTaskInputs", "SharedRemoteTaskStore", "task_link"]

logger = safe_logger(__name__)

T = TypeVar("T")

#: The kind of a kept task's lease in the store's ``leases`` table.
TASK_LEASE = "task"


def task_link(task_id: str) -> str:
    """What links an inbox item to the kept task whose short id is ``task_id`` (its call link)."""
    return f"task:{task_id}"


class SharedRemoteTaskStore(RemoteTaskStore):
    """The servers' tasks this host follows, in the shared store ``url`` (or ``store``, open);
    with ``keeping``, each followed under its lease (module rules)."""

    def __init__(
        self, url: StoreUrl, store: Store | None = None, *, keeping: CallKeeping | None = None
    ) -> None:
        super().__init__(url.shown)  # ``path``: only shown, in messages
        self.url = url
        self._store = store if keeping is None else keeping.store
        self._keeping = keeping

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

    async def record(self, task_id: str) -> StoredRemoteTask | None:
        """The store's record of the task ``task_id`` (short id), with its lease and sent keys."""
        rows = await self._with(lambda store: store.remote_tasks())
        return next((row for row in rows if row.id == task_id), None)

    async def inputs(self, task: StoredTask) -> KeptTaskInputs | None:
        """The task's input requests answered through the inbox and remembered in the store (with a
        lease keeping only); None when the store cannot say which keys were sent."""
        if self._keeping is None:
            return None
        try:
            record = await self.record(task.id)
        except StoreError as exc:
            logger.warning(
                "the inputs of the server's task %s are remembered in memory only: %s", task.id, exc
            )
            return None
        return KeptTaskInputs(self._keeping.store, task.id, () if record is None else record.sent_keys)

    async def keeping(self, task: StoredTask, follow: Callable[[], Awaitable[T]]) -> T:
        """Keep ``task`` while ``follow()`` runs, under its lease when this store has a keeping
        (:class:`TaskLeased` when another process holds it); the lease given up at the end."""
        keeping = self._keeping
        if keeping is None:
            return await super().keeping(task, follow)
        await self.add(task)
        store = keeping.store
        held: bool = False
        try:
            held = await store.claim(TASK_LEASE, task.id, keeping.owner, LEASE_PERIODS * keeping.lease)
        except StoreError as exc:
            logger.warning("the server's task %s is followed without its lease: %s", task.id, exc)
            return await super().keeping(task, follow)
        if not held:
            found = await self.record(task.id)
            raise TaskLeased(
                task.id,
                None if found is None else found.lease_owner,
                None if found is None else found.lease_expires,
            )

        def holding() -> bool:
            return held

        try:
            async with background_task_group() as helpers:
                helpers.start_soon(renew_lease, keeping, TASK_LEASE, task.id, holding, f"task {task.id}")
                return await super().keeping(task, follow)
        finally:
            held = False
            with anyio.CancelScope(shield=True):
                try:
                    await store.release(TASK_LEASE, task.id, keeping.owner)
                except StoreError as exc:
                    logger.warning("could not give up the lease of task %s: %s", task.id, exc)


class KeptTaskInputs:
    """A kept task's input requests: answered from the inbox items linked to it, else through the
    hooks (items linked to it); the keys sent with ``tasks/update`` recorded in the store."""

    def __init__(self, store: Store, task_id: str, sent: Collection[str]) -> None:
        self.store = store
        self.task_id = task_id
        self.link = task_link(task_id)
        self.sent: Collection[str] = frozenset(sent)

    async def answer(
        self, pending: dict[str, tuple[str, dict[str, Any] | None]], fulfil: Fulfil
    ) -> dict[str, dict[str, Any]]:
        """The responses to ``pending``: an answered inbox item's answer as given (a sampling request
        refused there fails as :class:`~host_receiver.errors.InputRequestFailed`), the others asked."""
        requests = {key: {"method": method, "params": params} for key, (method, params) in pending.items()}
        try:
            answers, again = await inbox_answers(self.store, self.link, requests)
        except StoreError as exc:  # the store is away: the hooks ask (and say so if they need it)
            logger.warning("the inbox answers of task %s could not be read: %s", self.task_id, exc)
            answers, again = {}, dict(pending)
        if again:
            answers |= await fulfil_all(again, fulfil, call_id=self.link)
        return answers

    async def record_sent(self, keys: Collection[str]) -> None:
        """Record in the store that ``keys`` were sent (a store error is logged)."""
        try:
            self.sent = await self.store.task_inputs_sent(self.task_id, list(keys))
        except StoreError as exc:
            logger.warning("could not record the answers sent for task %s: %s", self.task_id, exc)


def _fields_of(record: StoredTask | StoredRemoteTask) -> dict[str, Any]:
    """The fields a kept task has in both records (the store's adds its lease)."""
    return {f.name: getattr(record, f.name) for f in fields(StoredTask)}
