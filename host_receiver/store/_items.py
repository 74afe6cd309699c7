"""The inbox items: adding, reading, answering (the first answer wins), closing, withdrawing, leases.

Rules:

- An answer is one conditional update (pending -> answered) in a transaction
  that also appends its audit row: a second answer, from any process, gets
  :class:`~host_receiver.errors.AlreadyAnswered`.
- Every change of an item (added, answered, closed, rerouted) is announced:
  on PostgreSQL by NOTIFY in its transaction, and to this process's waiters
  and change feed (``_wake``) once it is committed.
- A host holds its pending items by a lease on its session, renewed while it
  lives (:meth:`InboxItems.renew_session`); any process withdraws the items
  of a session whose lease ran out (:meth:`InboxItems.withdraw_expired_sessions`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from host_receiver.errors import AlreadyAnswered, UnknownItem
from host_receiver.sanitize import safe_id
from host_receiver.store._audit import append_audit_row
from host_receiver.store._core import ITEM_COLUMNS, StoreCore, check_name, item_from_row, to_json
from host_receiver.store._engines import Tx
from host_receiver.store._records import InboxItem, ItemStatus, Person

__all__ = ["ASKED_AGAIN"]

#: Why a call's pending item leaves the inbox when the call's input request is asked again (resumed).
ASKED_AGAIN = "the call was resumed and asks again"


class InboxItems(StoreCore):
    """The inbox items of the store (module rules)."""

    async def add_item(
        self,
        *,
        host: str,
        server_name: str,
        server_title: str | None,
        server_identity: str,
        kind: str,
        payload: dict[str, Any],
        session: str,
        routed_to: Sequence[str] = (),
        expires: float | None = None,
        lease_seconds: float | None = None,
        item_id: str | None = None,
        call: tuple[str, str] | None = None,
    ) -> InboxItem:
        """Keep a new pending item; it is returned as stored. ``call``: the continuable call and the
        key of its input request that the item answers (a pending item asked before for that call
        and key, by a process that stopped, is withdrawn with :data:`ASKED_AGAIN`: one waits)."""
        now = time.time()
        item = InboxItem(
            id=item_id or uuid.uuid4().hex,
            host=host,
            server_name=server_name,
            server_title=server_title,
            server_identity=server_identity,
            kind=kind,
            payload=payload,
            routed_to=tuple(routed_to),
            status="pending",
            created=now,
            expires=expires,
            session=session,
            lease_expires=None if lease_seconds is None else now + lease_seconds,
            call_id=None if call is None else call[0],
            call_key=None if call is None else call[1],
        )
        row = (
            item.id,
            item.host,
            to_json(server_name),
            to_json(server_title),
            server_identity,
            kind,
            to_json(payload),
            to_json(list(item.routed_to)),
            "pending",
            now,
            expires,
            session,
            item.lease_expires,
            item.call_id,
            to_json(item.call_key),  # the server's key: any text
        )

        def step(tx: Tx) -> list[str]:
            replaced: list[str] = []
            if call is not None:
                for (older,) in tx.rows(
                    "SELECT id FROM inbox_items WHERE call_id = ? AND call_key = ? AND status = ?",
                    (call[0], row[-1], "pending"),
                ):
                    tx.execute(
                        "UPDATE inbox_items SET status = ?, reason = ? WHERE id = ? AND status = ?",
                        ("withdrawn", ASKED_AGAIN, older, "pending"),
                    )
                    replaced.append(str(older))
            tx.execute(
                "INSERT INTO inbox_items (id, host, server_name, server_title, server_identity, kind, "
                "payload, routed_to, status, created, expires, session, lease_expires, call_id, call_key) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                row,
            )
            if tx.dialect.notify:
                for changed in (*replaced, item.id):
                    tx.rows(tx.dialect.notify, (changed,))
            return replaced

        for changed in await self._engine.run(step):
            self._wake(changed)
        self._wake(item.id, item)
        return item

    async def item(self, item_id: str) -> InboxItem | None:
        """The item ``item_id``, whatever its status; None when the store has none."""
        rows = await self._read(f"SELECT {ITEM_COLUMNS} FROM inbox_items WHERE id = ?", (item_id,))
        return item_from_row(rows[0]) if rows else None

    async def call_items(self, call_id: str) -> dict[str, InboxItem]:
        """The items that answer the input requests of the call ``call_id``, by the request's key
        (of several for one key, the answered one, else the newest)."""
        rows = await self._read(
            f"SELECT {ITEM_COLUMNS} FROM inbox_items WHERE call_id = ? ORDER BY created, id", (call_id,)
        )
        found: dict[str, InboxItem] = {}
        for item in map(item_from_row, rows):
            kept = found.get(item.call_key or "")
            if item.call_key is not None and (kept is None or kept.status != "answered"):
                found[item.call_key] = item
        return found

    async def pending_items(self, person: Person | None = None) -> list[InboxItem]:
        """The pending items, oldest first; with ``person``, only those routed to them or their teams."""
        rows = await self._read(
            f"SELECT {ITEM_COLUMNS} FROM inbox_items WHERE status = ? ORDER BY created, id", ("pending",)
        )
        return [item for item in map(item_from_row, rows) if item.visible_to(person)]

    async def recent_items(self, limit: int, person: Person | None = None) -> list[InboxItem]:
        """The ``limit`` newest items that are not pending any more, newest first; with ``person``,
        those routed to them or their teams among the ``10 * limit`` newest (routing is JSON text,
        filtered here as :meth:`pending_items` filters it)."""
        rows = await self._read(
            f"SELECT {ITEM_COLUMNS} FROM inbox_items WHERE status <> ? ORDER BY created DESC, id DESC "
            "LIMIT ?",
            ("pending", limit if person is None else limit * 10),
        )
        return [item for item in map(item_from_row, rows) if item.visible_to(person)][:limit]

    async def answer(
        self, item_id: str, answer: dict[str, Any], *, by: str | None, address: str | None
    ) -> InboxItem:
        """Answer a pending item: one conditional update and its audit row, in one transaction.
        :class:`~host_receiver.errors.AlreadyAnswered` when it is not pending any more,
        :class:`~host_receiver.errors.UnknownItem` when there is no such item."""
        now = time.time()

        def step(tx: Tx) -> InboxItem:
            changed = tx.rows(
                "UPDATE inbox_items SET status = ?, answer = ?, answered_by = ?, answered_from = ?, "
                f"answered_at = ? WHERE id = ? AND status = ? RETURNING {ITEM_COLUMNS}",
                ("answered", to_json(answer), by, address, now, item_id, "pending"),
            )
            if not changed:
                if tx.rows("SELECT 1 FROM inbox_items WHERE id = ?", (item_id,)):
                    raise AlreadyAnswered(item_id)
                raise UnknownItem(f"no item {safe_id(item_id)} in the store")
            item = item_from_row(changed[0])
            if tx.dialect.notify:  # sent at the commit: asked before the audit's lock, held the less
                tx.rows(tx.dialect.notify, (item_id,))
            detail = {"kind": item.kind, "answer": answer, "server_identity": item.server_identity}
            append_audit_row(tx, "answered", item.host, item.server_name, item_id, by, address, detail, now)
            return item

        with self._changing(item_id):  # its own NOTIFY is not read back
            item = await self._engine.run(step)
            self._wake(item_id, item)
        return item

    async def close_item(self, item_id: str, status: ItemStatus, reason: str) -> bool:
        """Move a pending item to ``status`` (withdrawn, expired, refused) with ``reason``; False when
        it was not pending (answered first, or closed)."""
        if status in ("pending", "answered"):
            raise ValueError(f"close_item takes an ending other than answered, not {status!r}")

        def step(tx: Tx) -> bool:
            changed = tx.execute(
                "UPDATE inbox_items SET status = ?, reason = ? WHERE id = ? AND status = ?",
                (status, reason, item_id, "pending"),
            )
            if changed and tx.dialect.notify:
                tx.rows(tx.dialect.notify, (item_id,))
            return bool(changed)

        closed = await self._engine.run(step)
        self._wake(item_id)
        return closed

    async def widen_routing(self, item_id: str, names: Sequence[str]) -> InboxItem | None:
        """Route a pending item to ``names`` (people or teams) as well (an escalation): one conditional
        update, announced as a change; the item then, or None when it is not pending (or unknown).
        An item routed to everyone (empty routing) stays so."""
        for name in names:
            check_name(name, "a person's or team's")

        def step(tx: Tx) -> InboxItem | None:
            rows = tx.rows(
                f"SELECT {ITEM_COLUMNS} FROM inbox_items WHERE id = ? AND status = ?", (item_id, "pending")
            )
            if not rows:
                return None
            item = item_from_row(rows[0])
            if not item.routed_to:
                return item
            routed = tuple(dict.fromkeys([*item.routed_to, *names]))
            changed = tx.execute(
                "UPDATE inbox_items SET routed_to = ? WHERE id = ? AND status = ? AND routed_to = ?",
                (to_json(list(routed)), item_id, "pending", rows[0][7]),
            )
            if not changed:
                return None
            if tx.dialect.notify:
                tx.rows(tx.dialect.notify, (item_id,))
            return replace(item, routed_to=routed)

        with self._changing(item_id):
            item = await self._engine.run(step)
            if item is not None:
                self._wake(item_id, item)
        return item

    async def withdraw_session(self, session: str, reason: str) -> list[str]:
        """Withdraw every pending item of ``session`` with ``reason``; the ids withdrawn. Items of a
        continuable call are left: they wait for ``calls resume``."""

        def step(tx: Tx) -> list[str]:
            ids = [
                str(r[0])
                for r in tx.rows(
                    "SELECT id FROM inbox_items WHERE session = ? AND status = ? AND call_id IS NULL",
                    (session, "pending"),
                )
            ]
            for item_id in ids:
                tx.execute(
                    "UPDATE inbox_items SET status = ?, reason = ? WHERE id = ? AND status = ?",
                    ("withdrawn", reason, item_id, "pending"),
                )
                if tx.dialect.notify:
                    tx.rows(tx.dialect.notify, (item_id,))
            return ids

        ids = await self._engine.run(step)
        for item_id in ids:
            self._wake(item_id)
        return ids

    async def renew_session(self, session: str, seconds: float) -> int:
        """Extend the claim of ``session`` on its pending leased items to ``seconds`` from now (its
        host is alive); how many items it holds."""
        until = time.time() + seconds
        return int(
            await self._engine.run(
                lambda tx: tx.execute(
                    "UPDATE inbox_items SET lease_expires = ? "
                    "WHERE session = ? AND status = ? AND lease_expires IS NOT NULL",
                    (until, session, "pending"),
                )
            )
        )

    async def withdraw_expired_sessions(self, reason: str, now: float | None = None) -> list[str]:
        """Withdraw with ``reason`` every pending item whose session's claim ran out before ``now``
        (its host was killed: nobody renews it); the ids withdrawn. Items without a lease (a
        continuable call's) are left. Any host or inbox may call it; each item is withdrawn once."""
        moment = time.time() if now is None else now

        def step(tx: Tx) -> list[str]:
            ids = [
                str(r[0])
                for r in tx.rows(
                    "SELECT id FROM inbox_items WHERE status = ? AND lease_expires IS NOT NULL "
                    "AND lease_expires < ?",
                    ("pending", moment),
                )
            ]
            withdrawn = []
            for item_id in ids:
                if tx.execute(
                    "UPDATE inbox_items SET status = ?, reason = ? WHERE id = ? AND status = ? "
                    "AND lease_expires < ?",
                    ("withdrawn", reason, item_id, "pending", moment),
                ):
                    withdrawn.append(item_id)
                    if tx.dialect.notify:
                        tx.rows(tx.dialect.notify, (item_id,))
            return withdrawn

        ids = await self._engine.run(step)
        for item_id in ids:
            self._wake(item_id)
        return ids
