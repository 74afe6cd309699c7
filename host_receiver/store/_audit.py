"""The hash-chained audit log: each row carries the hash of the one before it.

A row's hash is SHA-256 over the canonical JSON of its fields and the
previous row's hash (:func:`audit_hash`); :meth:`AuditLog.verify_audit`
names the first row that was changed, removed or put out of order.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import asdict
from typing import Any

from host_receiver.store._core import StoreCore, from_json, to_json
from host_receiver.store._engines import Tx
from host_receiver.store._records import AuditRow, BrokenRow

__all__ = ["GENESIS", "append_audit_row", "audit_hash"]

#: The audit chain's first "previous" hash.
GENESIS = "0" * 64
_AUDIT_COLUMNS = "seq, at, event, host, server, item, person, address, detail, previous, hash"


def audit_hash(row: dict[str, Any]) -> str:
    """The hash of an audit row: SHA-256 over the canonical JSON of its fields and the previous hash."""
    fields = {
        k: row[k] for k in ("seq", "at", "event", "host", "server", "item", "person", "address", "detail")
    }
    fields["previous"] = row["previous"]
    return hashlib.sha256(to_json(fields).encode()).hexdigest()


def append_audit_row(
    tx: Tx,
    event: str,
    host: str | None,
    server: str | None,
    item: str | None,
    person: str | None,
    address: str | None,
    detail: dict[str, Any],
    at: float,
) -> AuditRow:
    """Append one row to the audit chain within the transaction ``tx``; the row."""
    if tx.dialect.lock_writers:  # one appender at a time: each row follows the last
        tx.rows(tx.dialect.lock_writers)
    last = tx.rows("SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1")
    seq, previous = (int(last[0][0]) + 1, str(last[0][1])) if last else (1, GENESIS)
    fields: dict[str, Any] = {
        "seq": seq,
        "at": at,
        "event": event,
        "host": host,
        "server": server,
        "item": item,
        "person": person,
        "address": address,
        "detail": detail,
        "previous": previous,
    }
    digest = audit_hash(fields)
    tx.execute(
        f"INSERT INTO audit_log ({_AUDIT_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (seq, at, event, host, to_json(server), item, person, address, to_json(detail), previous, digest),
    )
    return AuditRow(seq, at, event, host, server, item, person, address, detail, previous, digest)


class AuditLog(StoreCore):
    """The audit log of the store."""

    async def append_audit(
        self,
        event: str,
        *,
        host: str | None = None,
        server: str | None = None,
        item: str | None = None,
        person: str | None = None,
        address: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> AuditRow:
        """Append one row to the audit chain."""
        now = time.time()
        return await self._engine.run(
            lambda tx: append_audit_row(tx, event, host, server, item, person, address, detail or {}, now)
        )

    async def audit(self) -> list[AuditRow]:
        """The audit log, oldest first."""
        rows = await self._read(f"SELECT {_AUDIT_COLUMNS} FROM audit_log ORDER BY seq")
        return [
            AuditRow(
                int(r[0]),
                float(r[1]),
                str(r[2]),
                r[3],
                from_json(r[4]),
                r[5],
                r[6],
                r[7],
                from_json(r[8]),
                str(r[9]),
                str(r[10]),
            )
            for r in rows
        ]

    async def verify_audit(self) -> BrokenRow | None:
        """The first row that breaks the chain (changed, removed, out of order), or None when intact."""
        rows = await self.audit()
        previous, expected = GENESIS, 1
        for row in rows:
            if row.seq != expected:
                return BrokenRow(expected, f"row {expected} is missing (removed?); the next is row {row.seq}")
            if row.previous != previous:
                return BrokenRow(
                    row.seq, f"row {row.seq} does not follow row {row.seq - 1} (its previous hash differs)"
                )
            fields = asdict(row)
            if audit_hash(fields) != row.hash:
                return BrokenRow(row.seq, f"row {row.seq} was changed (its hash does not match its fields)")
            previous, expected = row.hash, expected + 1
        return None
