"""Remembered decisions: a verdict (session, always, never) per server identity and subject."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import cast

from host_receiver.errors import StoreError
from host_receiver.store._core import StoreCore
from host_receiver.store._records import Decision, Verdict

_VERDICTS = ("session", "always", "never")


class RememberedDecisions(StoreCore):
    """The decisions the store remembers."""

    async def remember(
        self, server_identity: str, subject: str, verdict: Verdict, *, session: str | None = None
    ) -> None:
        """Keep ``verdict`` for ``server_identity`` and ``subject`` (``person:NAME`` or ``team:NAME``)."""
        if verdict not in _VERDICTS:
            raise StoreError(f"a decision is one of {', '.join(_VERDICTS)}, not {verdict!r}")
        now = time.time()
        await self._engine.run(
            lambda tx: tx.execute(
                "INSERT INTO decisions (server_identity, subject, verdict, session, updated) "
                "VALUES (?,?,?,?,?) "
                "ON CONFLICT (server_identity, subject) DO UPDATE SET verdict = excluded.verdict, "
                "session = excluded.session, updated = excluded.updated",
                (server_identity, subject, verdict, session, now),
            )
        )

    async def decisions(self, server_identity: str, subjects: Iterable[str]) -> list[Decision]:
        """The decisions kept for ``server_identity`` and any of ``subjects``."""
        wanted = set(subjects)
        rows = await self._read(
            "SELECT server_identity, subject, verdict, session, updated FROM decisions "
            "WHERE server_identity = ? ORDER BY subject",
            (server_identity,),
        )
        return [
            Decision(str(r[0]), str(r[1]), cast(Verdict, r[2]), r[3], float(r[4]))
            for r in rows
            if r[1] in wanted
        ]

    async def forget(self, server_identity: str, subject: str) -> bool:
        """Forget one decision; False when none was kept."""
        return bool(
            await self._engine.run(
                lambda tx: tx.execute(
                    "DELETE FROM decisions WHERE server_identity = ? AND subject = ?",
                    (server_identity, subject),
                )
            )
        )
