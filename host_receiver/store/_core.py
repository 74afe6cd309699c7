"""What every part of the SQL store stands on: its state, one read, the announcing of a change,
and what the parts share (JSON text, the rule for names, the columns of an inbox item).

:class:`StoreCore` holds what a :class:`~host_receiver.store._store.SqlStore` sets in its
constructor: the engine, the waiters of this process and the change feed's count. Every part
above it is a mixin over it: the inbox items (:mod:`._items`), waiting for them
(:mod:`._waiting`), people (:mod:`._people`), the notification queue (:mod:`._notices`),
remembered decisions (:mod:`._decisions`), the audit log (:mod:`._audit`), continuable calls,
remote tasks and leases (:mod:`._calls`); :mod:`._store` joins them. A host reaches the
parts only through ``SqlStore``: their modules' ``__all__`` leave them out, so each method is
the store's (docs/limits.md names ``SqlStore.claim_notices``).

Text a server or a person wrote (the server's name and title, the request, the answer, the
audit detail) is kept as JSON text with every non-ASCII character escaped (:func:`to_json`), so
any string (control characters, lone surrogates, NUL) round-trips unchanged on every engine; it
is escaped where it is shown.

Fixed caps (docs/limits.md): ``POLL_INTERVAL``, ``NOTIFY_FALLBACK_POLL``, ``CHANGES_KEPT``.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

import anyio

from host_receiver.errors import StoreError
from host_receiver.store._engines import Engine
from host_receiver.store._records import InboxItem, ItemStatus
from host_receiver.store._url import StoreUrl

__all__ = [
    "CHANGES_KEPT",
    "ITEM_COLUMNS",
    "NAME",
    "NOTIFY_FALLBACK_POLL",
    "POLL_INTERVAL",
    "StoreCore",
    "check_name",
    "from_json",
    "item_from_row",
    "to_json",
]

#: How often a waiter reads its item again on SQLite and in memory (seconds; docs/limits.md).
POLL_INTERVAL = 0.05
#: How often a waiter reads its item again on PostgreSQL, besides LISTEN/NOTIFY (seconds).
NOTIFY_FALLBACK_POLL = 1.0
#: How many announced changes a process keeps the item ids of, for the change feed's readers
#: (:meth:`~host_receiver.store._waiting.AnswerWaiting.wait_changed_items`): one that fell further
#: behind reads every pending item again.
CHANGES_KEPT = 4096
#: What a person's or team's name may be: printable, no spaces, at most 64 characters.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}")
#: The columns of ``inbox_items``, in the order :func:`item_from_row` reads them.
ITEM_COLUMNS = (
    "id, host, server_name, server_title, server_identity, kind, payload, routed_to, status, created, "
    "expires, session, lease_expires, answer, answered_by, answered_from, answered_at, reason, "
    "call_id, call_key"
)


def to_json(value: Any) -> str:
    """``value`` as the store keeps it: canonical JSON text, every non-ASCII character escaped."""
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"), sort_keys=True)


def from_json(text: str | None) -> Any:
    """What :func:`to_json` kept (None stays None)."""
    return None if text is None else json.loads(text)


def check_name(name: str, what: str) -> str:
    """``name`` if it is a valid person or team name, else :class:`StoreError` saying the rule."""
    if not NAME.fullmatch(name):
        raise StoreError(
            f"{what} name {json.dumps(name[:80])}: use 1 to 64 letters, digits and . _ @ + - (starting with "
            "a letter or digit)"
        )
    return name


def item_from_row(r: Sequence[Any]) -> InboxItem:
    """The item a row of :data:`ITEM_COLUMNS` holds."""
    return InboxItem(
        id=str(r[0]),
        host=str(r[1]),
        server_name=from_json(r[2]),
        server_title=from_json(r[3]),
        server_identity=str(r[4]),
        kind=str(r[5]),
        payload=from_json(r[6]),
        routed_to=tuple(from_json(r[7])),
        status=cast(ItemStatus, r[8]),
        created=float(r[9]),
        expires=r[10],
        session=str(r[11]),
        lease_expires=r[12],
        answer=from_json(r[13]),
        answered_by=r[14],
        answered_from=r[15],
        answered_at=r[16],
        reason=r[17],
        call_id=r[18],
        call_key=from_json(r[19]),
    )


class StoreCore:
    """The state of one SQL store (engine, waiters, change feed), one read, and announcing a change."""

    def __init__(self, url: StoreUrl, engine: Engine) -> None:
        self.url = url
        self._engine = engine
        self._waiters: dict[str, set[anyio.Event]] = {}
        #: Set while ``_read_answers`` runs: what each waiter found, the items to read next.
        self._reading = False
        self._found: dict[str, InboxItem] = {}
        self._due: set[str] = set()
        self._due_event = anyio.Event()
        #: How many changes were announced to this process, and the event the next one sets.
        self._changes = 0
        self._changed = anyio.Event()
        #: The item each of the last :data:`CHANGES_KEPT` changes named (None: unnamed), and their count.
        self._named: deque[str | None] = deque(maxlen=CHANGES_KEPT)
        #: The count of the last change that named each item (of the last ``CHANGES_KEPT``).
        self._last_named: dict[str, int] = {}
        #: Each item as this process knows it, and the count of changes it is as new as: its own
        #: changes, and the change feed's reads (:meth:`~._waiting.AnswerWaiting.changed_items`).
        self._states: dict[str, tuple[int, InboxItem]] = {}
        #: The change feed's reads under way: each item's, the count it began at, and its end.
        self._inflight: dict[str, tuple[int, anyio.Event]] = {}
        #: This process's own changes under way (their transaction not back yet), by item.
        self._writing: dict[str, set[anyio.Event]] = {}
        self._poll = NOTIFY_FALLBACK_POLL if engine.dialect.name == "postgresql" else POLL_INTERVAL

    async def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """One query in a read-only transaction (SQLite: no write lock taken)."""
        return await self._engine.run(lambda tx: tx.rows(sql, params), write=False)

    @contextmanager
    def _changing(self, item_id: str) -> Iterator[None]:
        """While this process changes ``item_id`` (its NOTIFY may come back before its transaction
        does): the change feed's readers wait for the change's end (:meth:`_wake` with the item) rather
        than read the item back."""
        done = anyio.Event()
        self._writing.setdefault(item_id, set()).add(done)
        try:
            yield
        finally:
            writes = self._writing.get(item_id, set())
            writes.discard(done)
            if not writes:
                self._writing.pop(item_id, None)
            done.set()

    def _wake(self, item_id: str | None, item: InboxItem | None = None) -> None:
        """Wake the waiters of ``item_id`` (None: every waiter, to read again), and the change feed;
        ``item``: the item as this process's own change left it (committed), so that the feed's
        readers of this process need not read it back."""
        self._changes += 1
        self._named.append(item_id)
        if item_id is not None:
            self._last_named[item_id] = self._changes
            if item is not None:
                self._states[item_id] = (self._changes, item)
            if len(self._last_named) > 2 * CHANGES_KEPT:  # forget what fell out of the kept changes
                oldest = self._changes - CHANGES_KEPT
                self._last_named = {i: n for i, n in self._last_named.items() if n > oldest}
                self._states = {i: s for i, s in self._states.items() if s[0] > oldest}
        self._changed.set()
        self._changed = anyio.Event()
        if self._reading:  # the reader reads for them
            self._due.update(self._waiters if item_id is None else [item_id])
            self._due_event.set()
            return
        for key in list(self._waiters) if item_id is None else [item_id]:
            for event in self._waiters.get(key, ()):
                event.set()
