"""The store: one interface (:class:`Store`) over the engines, :class:`SqlStore`, and :func:`open_store`.

:class:`SqlStore` is one class made of a part per concern, each a mixin over
:class:`~host_receiver.store._core.StoreCore` (the engine, the waiters, the
change feed, and what the parts share): the inbox items
(:mod:`host_receiver.store._items`), waiting for them and the change feed
(:mod:`host_receiver.store._waiting`), people and their tokens and channels
(:mod:`host_receiver.store._people`), the notification queue
(:mod:`host_receiver.store._notices`), remembered decisions
(:mod:`host_receiver.store._decisions`), the hash-chained audit log
(:mod:`host_receiver.store._audit`), continuable calls, followed server tasks
and leases (:mod:`host_receiver.store._calls`). This module keeps the schema
and the store's own secrets, and opens a store.

Rules:

- Every statement is parameterised; the SQL differs between engines only in
  :class:`~host_receiver.store._schema.Dialect`. Each idea has one SQL text,
  whatever the engine.
- Text a server or a person wrote is kept as JSON text with every non-ASCII
  character escaped (:mod:`host_receiver.store._core`); it is escaped where
  it is shown.
- An answer is one conditional update in a transaction that also appends its
  audit row: a second answer, from any process, gets
  :class:`~host_receiver.errors.AlreadyAnswered` (:mod:`host_receiver.store._items`).
- Every change of an item is announced; the owner of an item waits for its
  answer, and an inbox that serves the store for the next change, through one
  reader per open store (:mod:`host_receiver.store._waiting`).
- A store newer than the code is refused, untouched (:meth:`SqlStore.migrate`).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Protocol

import anyio

from host_receiver.errors import StoreTooNew
from host_receiver.store._audit import AuditLog
from host_receiver.store._calls import CallsAndLeases
from host_receiver.store._core import NOTIFY_FALLBACK_POLL, POLL_INTERVAL
from host_receiver.store._decisions import RememberedDecisions
from host_receiver.store._engines import Tx, open_engine
from host_receiver.store._items import ASKED_AGAIN
from host_receiver.store._notices import NoticeQueue
from host_receiver.store._people import People
from host_receiver.store._records import (
    AuditRow,
    BrokenRow,
    ContinuableCall,
    Decision,
    InboxItem,
    ItemStatus,
    Person,
    PersonChannel,
    QueuedNotice,
    StoredRemoteTask,
    Verdict,
)
from host_receiver.store._schema import MIGRATIONS
from host_receiver.store._url import StoreUrl, parse_store_url
from host_receiver.store._waiting import AnswerWaiting

__all__ = ["ASKED_AGAIN", "NOTIFY_FALLBACK_POLL", "POLL_INTERVAL", "SCHEMA_VERSION", "Store", "open_store"]

#: The schema version this code writes (the number of migrations).
SCHEMA_VERSION = len(MIGRATIONS)


class Store(Protocol):
    """The shared store's operations (each is one transaction); see the module docstring for the rules."""

    url: StoreUrl

    async def migrate(self) -> tuple[int, int]: ...
    async def schema_version(self) -> int: ...

    # the inbox
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
    ) -> InboxItem: ...
    async def item(self, item_id: str) -> InboxItem | None: ...
    async def call_items(self, call_id: str) -> dict[str, InboxItem]: ...
    async def pending_items(self, person: Person | None = None) -> list[InboxItem]: ...
    async def recent_items(self, limit: int, person: Person | None = None) -> list[InboxItem]: ...
    async def answer(
        self, item_id: str, answer: dict[str, Any], *, by: str | None, address: str | None
    ) -> InboxItem: ...
    async def close_item(self, item_id: str, status: ItemStatus, reason: str) -> bool: ...
    async def withdraw_session(self, session: str, reason: str) -> list[str]: ...
    async def renew_session(self, session: str, seconds: float) -> int: ...
    async def withdraw_expired_sessions(self, reason: str, now: float | None = None) -> list[str]: ...
    async def wait_answer(self, item_id: str) -> InboxItem: ...
    async def wait_change(self, seen: int) -> int: ...
    async def wait_changed_items(self, seen: int) -> tuple[int, frozenset[str] | None]: ...
    async def items(self, ids: Iterable[str]) -> list[InboxItem]: ...
    async def changed_items(self, ids: Iterable[str]) -> list[InboxItem]: ...

    async def widen_routing(self, item_id: str, names: Sequence[str]) -> InboxItem | None: ...

    # people
    async def add_person(
        self, name: str, teams: Sequence[str] = (), *, channels: Sequence[str] = ()
    ) -> tuple[Person, str]: ...
    async def people(self) -> list[Person]: ...
    async def remove_person(self, name: str) -> bool: ...
    async def authenticate(self, token: str) -> Person | None: ...
    async def add_channel(self, name: str, url: str) -> PersonChannel: ...
    async def clear_channels(self, name: str) -> int: ...
    async def channels(self, name: str | None = None) -> list[PersonChannel]: ...

    # the notification queue
    async def queue_notices(self, entries: Sequence[tuple[str, str, dict[str, Any]]]) -> int: ...
    async def claim_notices(
        self, channel: str, owner: str, seconds: float, limit: int = 100
    ) -> list[QueuedNotice]: ...
    async def finish_notices(self, channel: str, keys: Sequence[str], owner: str) -> int: ...
    async def release_notices(self, owner: str) -> int: ...
    async def prune_notices(self, before: float) -> int: ...
    async def queued_channels(self, owner: str | None = None) -> list[str]: ...
    async def told_of_ended(self) -> list[tuple[str, InboxItem]]: ...

    # the store's own secrets
    async def secret(self, name: str) -> str: ...

    # decisions
    async def remember(
        self, server_identity: str, subject: str, verdict: Verdict, *, session: str | None = None
    ) -> None: ...
    async def decisions(self, server_identity: str, subjects: Iterable[str]) -> list[Decision]: ...
    async def forget(self, server_identity: str, subject: str) -> bool: ...

    # the audit log
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
    ) -> AuditRow: ...
    async def audit(self) -> list[AuditRow]: ...
    async def verify_audit(self) -> BrokenRow | None: ...

    # continuable calls and leases
    async def save_call(self, call: ContinuableCall) -> None: ...
    async def call(self, call_id: str) -> ContinuableCall | None: ...
    async def calls(self) -> list[ContinuableCall]: ...
    async def set_call_status(self, call_id: str, status: str) -> bool: ...
    async def keep_remote_task(self, task: StoredRemoteTask) -> None: ...
    async def remote_tasks(self) -> list[StoredRemoteTask]: ...
    async def forget_remote_task(self, task_id: str) -> bool: ...
    async def task_inputs_sent(self, task_id: str, keys: Sequence[str]) -> tuple[str, ...]: ...
    async def claim(self, kind: str, key: str, owner: str, seconds: float) -> bool: ...
    async def renew(self, kind: str, key: str, owner: str, seconds: float) -> bool: ...
    async def release(self, kind: str, key: str, owner: str) -> bool: ...


class SqlStore(AnswerWaiting, People, NoticeQueue, RememberedDecisions, AuditLog, CallsAndLeases):
    """:class:`Store` over an :class:`~host_receiver.store._engines.Engine` (every backend)."""

    # --- the schema -------------------------------------------------------

    async def migrate(self) -> tuple[int, int]:
        """Apply the migrations the store lacks; (version before, version after). A store newer
        than the code is refused (:class:`~host_receiver.errors.StoreTooNew`), untouched."""

        def step(tx: Tx) -> tuple[int, int]:
            if tx.dialect.lock_writers:
                tx.rows(tx.dialect.lock_writers)
            tx.execute("CREATE TABLE IF NOT EXISTS store_schema (version BIGINT NOT NULL)")
            found = tx.rows("SELECT version FROM store_schema")
            if not found:
                tx.execute("INSERT INTO store_schema (version) VALUES (?)", (0,))
            before = int(found[0][0]) if found else 0
            if before > SCHEMA_VERSION:
                raise StoreTooNew(before, SCHEMA_VERSION)
            for statements in MIGRATIONS[before:]:
                for statement in statements:
                    tx.execute(statement)
            tx.execute("UPDATE store_schema SET version = ?", (SCHEMA_VERSION,))
            return before, SCHEMA_VERSION

        return await self._engine.run(step)

    async def schema_version(self) -> int:
        """The schema version the store is at."""
        rows = await self._read("SELECT version FROM store_schema")
        return int(rows[0][0]) if rows else 0

    # --- the store's own secrets ---------------------------------------------------

    async def secret(self, name: str) -> str:
        """The store's secret ``name``: made (random, 256 bits) by whichever process asks first,
        the same for every process after; never logged nor shown."""
        made = secrets.token_urlsafe(32)

        def step(tx: Tx) -> str:
            tx.execute(
                "INSERT INTO store_secrets (name, value, created) VALUES (?,?,?) "
                "ON CONFLICT (name) DO NOTHING",
                (name, made, time.time()),
            )
            return str(tx.rows("SELECT value FROM store_secrets WHERE name = ?", (name,))[0][0])

        return await self._engine.run(step)


@asynccontextmanager
async def open_store(url: str | StoreUrl = "memory", *, migrate: bool = True) -> AsyncIterator[SqlStore]:
    """The store ``url`` names (``memory``, ``sqlite:///PATH``, a ``.db``/``.sqlite`` path,
    ``postgresql://...``), its schema brought up to date (unless ``migrate=False``), open for the
    block; meanwhile a task reads for the waiters (:meth:`SqlStore.wait_answer`) and, on
    PostgreSQL, one relays LISTEN/NOTIFY to them."""
    parsed = url if isinstance(url, StoreUrl) else parse_store_url(url)
    engine = await open_engine(parsed)
    try:
        store = SqlStore(parsed, engine)
        if migrate:
            await store.migrate()
        try:
            async with anyio.create_task_group() as group:
                await group.start(store._read_answers)
                group.start_soon(engine.listen, store._wake)  # returns at once: nothing to listen to
                try:
                    yield store
                finally:
                    group.cancel_scope.cancel()
        except BaseExceptionGroup as failures:  # the block's own error, as raised (the relay only waits)
            if len(failures.exceptions) == 1:
                raise failures.exceptions[0] from None
            raise
    finally:
        with anyio.CancelScope(shield=True):
            await engine.aclose()


def _conforms(store: SqlStore) -> Store:
    """(For mypy: :class:`SqlStore` is a :class:`Store`.)"""
    return store
