"""The queue of notifications: each notice queued once per channel and key, claimed by one process.

A notice is claimed by a conditional update (unsent, and unclaimed, claimed
by the same owner, or its claim run out), so that of several processes one
sends it; a notice sent stays (it keeps it from being queued again) until
its item is no longer pending and it is pruned.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from host_receiver.store._core import ITEM_COLUMNS, StoreCore, from_json, item_from_row, to_json
from host_receiver.store._engines import Tx
from host_receiver.store._records import InboxItem, QueuedNotice


class NoticeQueue(StoreCore):
    """The notification queue of the store."""

    async def queue_notices(self, entries: Sequence[tuple[str, str, dict[str, Any]]]) -> int:
        """Queue notices: ``(channel, key, notice fields)`` each, once per channel and key (the
        idempotency key: a notice queued, claimed or sent before is not queued again); how many were new."""
        now = time.time()

        def step(tx: Tx) -> int:
            return sum(
                tx.execute(
                    "INSERT INTO notifications (channel, notice_key, notice, attempts, next_attempt, "
                    "created) VALUES (?,?,?,?,?,?) ON CONFLICT (channel, notice_key) DO NOTHING",
                    (channel, key, to_json(notice), 0, now, now),
                )
                for channel, key, notice in entries
            )

        return await self._engine.run(step) if entries else 0

    async def claim_notices(
        self, channel: str, owner: str, seconds: float, limit: int = 100
    ) -> list[QueuedNotice]:
        """Claim the notices of ``channel`` due now for ``seconds``, oldest first: each by a
        conditional update (unsent, and unclaimed, claimed by ``owner``, or its claim run out), so
        that of several processes one sends it; what ``owner`` holds now, its attempts counted."""
        now = time.time()

        def step(tx: Tx) -> list[QueuedNotice]:
            due = "sent IS NULL AND next_attempt <= ? AND (owner IS NULL OR owner = ? OR claimed_until < ?)"
            rows = tx.rows(
                f"SELECT notice_key, notice, attempts FROM notifications WHERE channel = ? AND {due} "
                "ORDER BY created, notice_key LIMIT ?",
                (channel, now, owner, now, limit),
            )
            claimed = []
            for key, notice, attempts in rows:
                if tx.execute(
                    "UPDATE notifications SET owner = ?, claimed_until = ?, attempts = attempts + 1 "
                    f"WHERE channel = ? AND notice_key = ? AND {due}",
                    (owner, now + seconds, channel, key, now, owner, now),
                ):
                    claimed.append(QueuedNotice(channel, str(key), from_json(notice), int(attempts) + 1))
            return claimed

        return await self._engine.run(step)

    async def finish_notices(self, channel: str, keys: Sequence[str], owner: str) -> int:
        """Mark ``owner``'s claimed notices of ``channel`` sent (delivered or given up): they are
        not sent again, nor queued again; how many were ``owner``'s."""
        now = time.time()

        def step(tx: Tx) -> int:
            return sum(
                tx.execute(
                    "UPDATE notifications SET sent = ?, owner = NULL, claimed_until = NULL "
                    "WHERE channel = ? AND notice_key = ? AND owner = ? AND sent IS NULL",
                    (now, channel, key, owner),
                )
                for key in keys
            )

        return await self._engine.run(step) if keys else 0

    async def release_notices(self, owner: str) -> int:
        """Give up ``owner``'s claims on unsent notices (a process stopping): another may send them now."""
        return int(
            await self._engine.run(
                lambda tx: tx.execute(
                    "UPDATE notifications SET owner = NULL, claimed_until = NULL "
                    "WHERE owner = ? AND sent IS NULL",
                    (owner,),
                )
            )
        )

    async def prune_notices(self, before: float) -> int:
        """Forget the notices sent before ``before`` whose item is no longer pending (those of a
        pending item stay: they keep it from being queued again); how many."""
        return int(
            await self._engine.run(
                lambda tx: tx.execute(
                    "DELETE FROM notifications WHERE sent IS NOT NULL AND sent < ? AND NOT EXISTS ("
                    "SELECT 1 FROM inbox_items i WHERE i.status = ? "
                    "AND substr(notifications.notice_key, 1, length(i.id) + 1) = i.id || '.')",
                    (before, "pending"),
                )
            )
        )

    async def queued_channels(self, owner: str | None = None) -> list[str]:
        """The channels that have notices not sent yet (claimed or not); with ``owner``, only those
        with notices that ``owner`` may claim now."""
        if owner is None:
            rows = await self._read(
                "SELECT DISTINCT channel FROM notifications WHERE sent IS NULL ORDER BY channel"
            )
        else:
            now = time.time()
            rows = await self._read(
                "SELECT DISTINCT channel FROM notifications WHERE sent IS NULL AND next_attempt <= ? "
                "AND (owner IS NULL OR owner = ? OR claimed_until < ?) ORDER BY channel",
                (now, owner, now),
            )
        return [str(r[0]) for r in rows]

    async def told_of_ended(self) -> list[tuple[str, InboxItem]]:
        """Each channel told that an item waits (its ``item.waiting`` or ``item.escalated`` notice
        queued) whose item was answered or expired since, and no ``item.answered`` or
        ``item.expired`` notice queued for it yet: ``(channel, item)`` pairs."""
        columns = ", ".join(f"i.{column.strip()}" for column in ITEM_COLUMNS.split(","))
        found: list[tuple[str, InboxItem]] = []
        for event in ("item.waiting", "item.escalated"):
            cut = len(event) + 1  # the key is "{item id}.{event}": the id is what comes before
            rows = await self._read(
                f"SELECT n.channel, {columns} FROM notifications n JOIN inbox_items i "
                f"ON i.id = substr(n.notice_key, 1, length(n.notice_key) - {cut}) "
                "WHERE n.notice_key LIKE ? AND i.status IN (?, ?) AND NOT EXISTS ("
                "SELECT 1 FROM notifications e WHERE e.channel = n.channel "
                "AND e.notice_key IN (i.id || ?, i.id || ?)) ORDER BY i.created, i.id, n.channel",
                (f"%.{event}", "answered", "expired", ".item.answered", ".item.expired"),
            )
            found += [(str(r[0]), item_from_row(r[1:])) for r in rows]
        return found
