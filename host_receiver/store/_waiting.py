"""Waiting for an item's answer, and for any change (the change feed): one reader per process.

Rules:

- An inbox that serves the store (``inbox serve``) waits for the next change
  with :meth:`AnswerWaiting.wait_change` and reads the pending items again
  (LISTEN/NOTIFY on PostgreSQL, reading every ``POLL_INTERVAL`` seconds on
  SQLite), or with :meth:`AnswerWaiting.wait_changed_items` and reads only the
  items the changes named (:meth:`AnswerWaiting.items`), all of them again
  only when it cannot know which changed.
- The owner of an item learns of its answer through
  :meth:`AnswerWaiting.wait_answer`: at once for an answer given in this
  process; through PostgreSQL's LISTEN/NOTIFY from another one, reading again
  every ``NOTIFY_FALLBACK_POLL`` seconds in case a notification was lost; by
  reading every ``POLL_INTERVAL`` seconds on SQLite.
- Within an open store (``open_store``) one task reads for every waiter of
  the process: the items a notification named since its last read, in one
  query, and every waited item each poll period, in one query per
  :data:`READ_BATCH` of them, at most :data:`READS_AT_ONCE` reads at once (a
  thousand waiting items are not a thousand reads a second, each queued behind
  the others for a worker thread and a pool connection). After the LISTEN
  connection is opened again, every waited item is read again. A read that
  fails is logged and tried again with backoff: a waiter keeps waiting.

Fixed caps (docs/limits.md): ``READ_BATCH``, ``READS_AT_ONCE``, ``READ_RETRY_MOST``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import islice

import anyio
from anyio.abc import TaskStatus

from host_receiver.errors import StoreError, UnknownItem
from host_receiver.sanitize import safe_id, safe_logger
from host_receiver.store._core import ITEM_COLUMNS, item_from_row
from host_receiver.store._items import InboxItems
from host_receiver.store._records import InboxItem

__all__ = ["READS_AT_ONCE", "READ_BATCH", "READ_RETRY_MOST"]

logger = safe_logger(__name__)

#: The most waited items one read of the store's answer reader names (one query each).
READ_BATCH = 500
#: The most reads of waited items one process runs at once (those named meanwhile wait for the next).
READS_AT_ONCE = 4
#: The longest pause before the answer reader reads a failing store again (seconds).
READ_RETRY_MOST = 5.0


class AnswerWaiting(InboxItems):
    """Waiting for items and changes (module rules)."""

    async def wait_answer(self, item_id: str) -> InboxItem:
        """Wait until ``item_id`` is no longer pending (answered, or closed); the item then.
        Bound it with ``anyio.fail_after``; :class:`~host_receiver.errors.UnknownItem` if there is none."""
        if self._reading:
            return await self._wait_read(item_id)
        while True:
            event = anyio.Event()
            waiters = self._waiters.setdefault(item_id, set())
            waiters.add(event)  # before reading: a change after the read wakes this event
            try:
                item = await self.item(item_id)
                if item is None:
                    raise UnknownItem(f"no item {safe_id(item_id)} in the store")
                if item.status != "pending":
                    return item
                with anyio.move_on_after(self._poll):
                    await event.wait()
            finally:
                waiters.discard(event)
                if not waiters:
                    self._waiters.pop(item_id, None)

    async def wait_change(self, seen: int) -> int:
        """The change feed: wait until a change of any item is announced after ``seen`` (what this
        returned last; 0 at first), or for the poll interval (a change from another process on
        SQLite, a lost notification); the count of changes now. Returns at once when one came
        meanwhile, so that a reader of the items between two calls misses nothing."""
        if self._changes == seen:
            with anyio.move_on_after(self._poll):
                await self._changed.wait()
        return self._changes

    async def wait_changed_items(self, seen: int) -> tuple[int, frozenset[str] | None]:
        """:meth:`wait_change`, and the ids of the items the changes after ``seen`` named; None when
        the feed cannot know them, so that every pending item is to be read again: at first
        (``seen`` < 0), after an unnamed change (the LISTEN connection opened again), when more than
        :data:`~host_receiver.store._core.CHANGES_KEPT` came meanwhile, on a SQLite file (another
        process's change is not announced) and after a wait without a change on PostgreSQL (a
        notification lost)."""
        now = await self.wait_change(seen)
        count = now - seen
        if seen < 0 or count > len(self._named) or self.url.kind == "sqlite":
            return now, None
        if count == 0:
            return now, None if self.url.kind == "postgresql" else frozenset()
        named = list(islice(self._named, len(self._named) - count, None))
        if None in named:
            return now, None
        return now, frozenset(i for i in named if i is not None)

    async def items(self, ids: Iterable[str]) -> list[InboxItem]:
        """The items ``ids`` that the store has, whatever their status, in no set order: one query
        per :data:`READ_BATCH`."""
        wanted = sorted(set(ids))
        found: list[InboxItem] = []
        for start in range(0, len(wanted), READ_BATCH):
            batch = wanted[start : start + READ_BATCH]
            rows = await self._read(
                f"SELECT {ITEM_COLUMNS} FROM inbox_items WHERE id IN ({','.join('?' * len(batch))})", batch
            )
            found += map(item_from_row, rows)
        return found

    async def changed_items(self, ids: Iterable[str]) -> list[InboxItem]:
        """The items ``ids`` (those the change feed named) as they are now, whatever their status, in
        no set order, the store read once per process: an item is taken as this process knows it when
        it ended (an ended item changes no more: a process's own answer is not read back) or when its
        last change was this process's own, or read since by another reader of the feed (the page's
        and the notifier's: one read for both); the rest are read (:meth:`items`), or awaited from a
        read of them under way that began after their last change."""
        wanted, found = set(ids), dict[str, InboxItem]()
        while missing := wanted - found.keys():
            unread, flights = [], set[anyio.Event]()
            for item_id in missing:
                needed, known = self._last_named.get(item_id, 0), self._states.get(item_id)
                flight = self._inflight.get(item_id)
                if item_id in self._writing:  # this process's own change: its end tells the item
                    flights |= self._writing[item_id]
                elif known is not None and (known[1].status != "pending" or known[0] >= needed):
                    found[item_id] = known[1]
                elif flight is not None and flight[0] >= needed:
                    flights.add(flight[1])
                else:
                    unread.append(item_id)
            if unread:
                found |= {item.id: item for item in await self._read_changed(unread)}
                wanted -= set(unread)  # read: those not found are not in the store
            elif flights:
                for flight_done in flights:
                    await flight_done.wait()  # then taken as read, or read here if it failed
        return list(found.values())

    async def _read_changed(self, ids: list[str]) -> list[InboxItem]:
        """Read ``ids`` for :meth:`changed_items`: what is found is known as new as the changes
        announced before the read began; meanwhile the read is under way for another reader."""
        begun, done = self._changes, anyio.Event()
        flight = (begun, done)
        self._inflight.update(dict.fromkeys(ids, flight))
        try:
            read = await self.items(ids)
        finally:
            for item_id in ids:
                if self._inflight.get(item_id) is flight:
                    del self._inflight[item_id]
            done.set()
        for item in read:
            known = self._states.get(item.id)
            if known is None or known[0] < begun:
                self._states[item.id] = (begun, item)
        return read

    async def _wait_read(self, item_id: str) -> InboxItem:
        """:meth:`wait_answer` while :meth:`_read_answers` reads for every waiter: one read of the
        item's own (it may have ended already, or not exist), then the reader's word."""
        event = anyio.Event()
        self._waiters.setdefault(item_id, set()).add(event)  # before reading: nothing after is missed
        try:
            item = await self.item(item_id)
            if item is None:
                raise UnknownItem(f"no item {safe_id(item_id)} in the store")
            if item.status != "pending":
                return item
            await event.wait()
            found = self._found.get(item_id)  # None: the reader stopped
        finally:
            waiters = self._waiters.get(item_id, set())
            waiters.discard(event)
            if not waiters:
                self._waiters.pop(item_id, None)
                self._found.pop(item_id, None)
        return found if found is not None else await self.wait_answer(item_id)

    async def _read_answers(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Read for every waiter of this process until cancelled: the items a change named, as soon
        as one is announced, and every waited item each poll period (module rules); at most
        :data:`READS_AT_ONCE` reads at once, the items named meanwhile gathered for the next."""
        self._reading = True
        slots = anyio.Semaphore(READS_AT_ONCE)
        pause = [0.1]  # the pause after a failed read, doubling; shared by the reads
        try:
            async with anyio.create_task_group() as reads:
                task_status.started()
                poll_at = anyio.current_time() + self._poll
                while True:
                    with anyio.move_on_after(max(0.0, poll_at - anyio.current_time())):
                        if not self._due:
                            await self._due_event.wait()
                    if anyio.current_time() >= poll_at:
                        self._due.update(self._waiters)
                        poll_at = anyio.current_time() + self._poll
                    await slots.acquire()  # what is named while every slot reads waits for the next
                    due, self._due = {i for i in self._due if i in self._waiters}, set()
                    self._due_event = anyio.Event()
                    if due:
                        reads.start_soon(self._read_due, sorted(due), slots, pause)
                    else:
                        slots.release()
        finally:
            self._reading = False
            for waiters in self._waiters.values():  # a waiter left behind reads on its own
                for event in waiters:
                    event.set()

    async def _read_due(self, ids: list[str], slots: anyio.Semaphore, pause: list[float]) -> None:
        """Read ``ids`` and hand each ended item to its waiters; on a store error, name them again
        after a pause."""
        try:
            try:
                ended = await self._ended_items(ids)
            except StoreError as exc:
                logger.warning("store: cannot read the waited items (%s); again in %.1f s", exc, pause[0])
                await anyio.sleep(pause[0])
                pause[0] = min(pause[0] * 2, READ_RETRY_MOST)
                self._due.update(ids)
                self._due_event.set()
                return
            pause[0] = 0.1
            for item in ended:
                waiters = self._waiters.get(item.id)
                if waiters:
                    self._found[item.id] = item
                    for event in waiters:
                        event.set()
        finally:
            slots.release()

    async def _ended_items(self, ids: Sequence[str]) -> list[InboxItem]:
        """Those of the items ``ids`` that are no longer pending: one query per :data:`READ_BATCH`."""
        ended: list[InboxItem] = []
        for start in range(0, len(ids), READ_BATCH):
            batch = ids[start : start + READ_BATCH]
            rows = await self._read(
                f"SELECT {ITEM_COLUMNS} FROM inbox_items WHERE status <> ? "
                f"AND id IN ({','.join('?' * len(batch))})",
                ("pending", *batch),
            )
            ended += map(item_from_row, rows)
        return ended
