"""What an ``inbox serve`` process reads of the store, as the tests count it: the items each query
read (the board's and the notifier's change feed read only the items a change named); shared by
the fleet tests of tests/web and tests/notify."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import anyio
import pytest

from host_receiver.store import SqlStore
from host_receiver.store import _core as store_core


def named_store_url(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, engine: str) -> str:
    """A store whose changes are named to their readers (``memory``: in this process; PostgreSQL: by
    NOTIFY from another), read again only when a change is announced (the fallback poll: an hour)."""
    monkeypatch.setattr(store_core, "NOTIFY_FALLBACK_POLL", 3600.0)
    return "memory" if engine == "memory" else str(request.getfixturevalue("postgres_url"))


class Reads:
    """The ids of the items a store read since it was counted (:func:`reading`), row by row."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self._more = anyio.Event()

    def add(self, ids: Sequence[str]) -> None:
        self.ids += ids
        self._more.set()
        self._more = anyio.Event()

    async def until(self, done: Callable[[list[str]], bool]) -> None:
        """Wait until ``done(ids)`` (bound it with ``anyio.fail_after``)."""
        while not done(self.ids):
            await self._more.wait()


def reading(store: SqlStore) -> Reads:
    """Count the items ``store`` reads from now on."""
    reads, real = Reads(), store._read

    async def counted(sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        rows = await real(sql, params)
        if "FROM inbox_items" in sql:
            reads.add([str(row[0]) for row in rows])
        return rows

    setattr(store, "_read", counted)  # noqa: B010 (an instance's method, replaced)
    return reads
