"""What outlives a process: continuable calls, the server tasks being followed, and leases on them.

A lease on ``(kind, key)`` is taken by one conditional upsert (it was free,
expired, or its owner's own), renewed by its owner, and runs out when its
owner stops renewing it (a killed process): then another process takes the
call or task over.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from host_receiver.store._core import StoreCore, from_json, to_json
from host_receiver.store._engines import Tx
from host_receiver.store._records import ContinuableCall, StoredRemoteTask

_CALL_COLUMNS = (
    "c.id, c.server_identity, c.address, c.method, c.target, c.arguments, c.input_requests, "
    "c.request_state, c.rounds_used, c.deadline, c.status, l.owner, l.expires, c.items, c.created"
)


class CallsAndLeases(StoreCore):
    """The continuable calls, followed server tasks and leases of the store."""

    async def save_call(self, call: ContinuableCall) -> None:
        """Keep ``call`` (a new one, or its next round: the same id is replaced)."""
        row = (
            call.id,
            call.server_identity,
            to_json(call.address),
            call.method,
            to_json(call.target),
            to_json(call.arguments),
            to_json(call.input_requests),
            to_json(call.request_state),
            call.rounds_used,
            call.deadline,
            call.status,
            to_json(call.items),
            call.created or time.time(),
        )
        await self._engine.run(
            lambda tx: tx.execute(
                "INSERT INTO continuable_calls (id, server_identity, address, method, target, arguments, "
                "input_requests, request_state, rounds_used, deadline, status, items, created) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (id) DO UPDATE SET "
                "input_requests = excluded.input_requests, request_state = excluded.request_state, "
                "rounds_used = excluded.rounds_used, deadline = excluded.deadline, status = excluded.status, "
                "items = excluded.items",
                row,
            )
        )

    async def call(self, call_id: str) -> ContinuableCall | None:
        """The continuable call ``call_id`` with its lease, or None."""
        rows = await self._read(
            f"SELECT {_CALL_COLUMNS} FROM continuable_calls c LEFT JOIN leases l "
            "ON l.kind = ? AND l.id = c.id WHERE c.id = ?",
            ("call", call_id),
        )
        return _call(rows[0]) if rows else None

    async def calls(self) -> list[ContinuableCall]:
        """Every continuable call, oldest first."""
        rows = await self._read(
            f"SELECT {_CALL_COLUMNS} FROM continuable_calls c LEFT JOIN leases l "
            "ON l.kind = ? AND l.id = c.id ORDER BY c.created, c.id",
            ("call",),
        )
        return [_call(r) for r in rows]

    async def set_call_status(self, call_id: str, status: str) -> bool:
        """Set a call's status (``waiting``, ``finished``, ``failed``); False when there is no such call."""
        return bool(
            await self._engine.run(
                lambda tx: tx.execute(
                    "UPDATE continuable_calls SET status = ? WHERE id = ?", (status, call_id)
                )
            )
        )

    async def keep_remote_task(self, task: StoredRemoteTask) -> None:
        """Keep a server task being followed (the first record of an id stays, as ``--task-store`` does)."""
        row = (
            task.id,
            task.identity,
            to_json(task.address),
            task.version,
            task.task_id,
            to_json(task.tool),
            to_json(task.arguments),
            task.ttl_ms,
            task.created,
        )
        await self._engine.run(
            lambda tx: tx.execute(
                "INSERT INTO remote_tasks (id, identity, address, version, task_id, tool, arguments, ttl_ms, "
                "created) VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT (id) DO NOTHING",
                row,
            )
        )

    async def remote_tasks(self) -> list[StoredRemoteTask]:
        """The server tasks being followed, oldest first, with their leases."""
        rows = await self._read(
            "SELECT t.id, t.identity, t.address, t.version, t.task_id, t.tool, t.arguments, t.ttl_ms, "
            "t.created, l.owner, l.expires, t.sent_keys FROM remote_tasks t LEFT JOIN leases l "
            "ON l.kind = ? AND l.id = t.id ORDER BY t.created, t.id",
            ("task",),
        )
        return [
            StoredRemoteTask(
                id=str(r[0]),
                identity=str(r[1]),
                address=from_json(r[2]),
                version=str(r[3]),
                task_id=str(r[4]),
                tool=from_json(r[5]),
                arguments=from_json(r[6]),
                ttl_ms=None if r[7] is None else int(r[7]),
                created=float(r[8]),
                lease_owner=r[9],
                lease_expires=r[10],
                sent_keys=tuple(from_json(r[11]) or ()),
            )
            for r in rows
        ]

    async def task_inputs_sent(self, task_id: str, keys: Sequence[str]) -> tuple[str, ...]:
        """Add ``keys`` to the input requests of the followed task ``task_id`` already sent with
        ``tasks/update`` (read and written in one transaction); the keys sent so far."""

        def step(tx: Tx) -> tuple[str, ...]:
            rows = tx.rows("SELECT sent_keys FROM remote_tasks WHERE id = ?", (task_id,))
            if not rows:
                return ()
            sent = list(from_json(rows[0][0]) or [])
            sent += [key for key in keys if key not in sent]
            tx.execute("UPDATE remote_tasks SET sent_keys = ? WHERE id = ?", (to_json(sent), task_id))
            return tuple(sent)

        return await self._engine.run(step)

    async def forget_remote_task(self, task_id: str) -> bool:
        """Remove a followed task's record (it ended); False when there was none."""
        return bool(
            await self._engine.run(lambda tx: tx.execute("DELETE FROM remote_tasks WHERE id = ?", (task_id,)))
        )

    async def claim(self, kind: str, key: str, owner: str, seconds: float) -> bool:
        """Take the lease on ``(kind, key)`` for ``seconds`` by one conditional upsert: True when
        ``owner`` holds it now (it was free, expired, or its own)."""
        now = time.time()
        return bool(
            await self._engine.run(
                lambda tx: tx.execute(
                    "INSERT INTO leases (kind, id, owner, expires) VALUES (?,?,?,?) ON CONFLICT (kind, id) "
                    "DO UPDATE SET owner = excluded.owner, expires = excluded.expires "
                    "WHERE leases.expires < ? OR leases.owner = excluded.owner",
                    (kind, key, owner, now + seconds, now),
                )
            )
        )

    async def renew(self, kind: str, key: str, owner: str, seconds: float) -> bool:
        """Extend ``owner``'s lease; False when it is not theirs any more (expired and taken)."""
        now = time.time()
        return bool(
            await self._engine.run(
                lambda tx: tx.execute(
                    "UPDATE leases SET expires = ? WHERE kind = ? AND id = ? AND owner = ?",
                    (now + seconds, kind, key, owner),
                )
            )
        )

    async def release(self, kind: str, key: str, owner: str) -> bool:
        """Give up ``owner``'s lease; False when it was not theirs."""
        return bool(
            await self._engine.run(
                lambda tx: tx.execute(
                    "DELETE FROM leases WHERE kind = ? AND id = ? AND owner = ?", (kind, key, owner)
                )
            )
        )


def _call(r: Sequence[Any]) -> ContinuableCall:
    return ContinuableCall(
        id=str(r[0]),
        server_identity=str(r[1]),
        address=from_json(r[2]),
        method=str(r[3]),
        target=from_json(r[4]),
        arguments=from_json(r[5]),
        input_requests=from_json(r[6]),
        request_state=from_json(r[7]),
        rounds_used=int(r[8]),
        deadline=r[9],
        status=str(r[10]),
        lease_owner=r[11],
        lease_expires=r[12],
        items=from_json(r[13]),
        created=float(r[14]),
    )
