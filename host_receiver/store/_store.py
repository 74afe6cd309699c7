"""The store: one interface (:class:`Store`) over the engines, and :func:`open_store`.

(About 1320 lines, one idea: every table's typed methods in one class over one set of SQL texts,
so that each idea has one SQL text whatever the engine.)

Rules:

- Every statement is parameterised; the SQL differs between engines only in
  :class:`~host_receiver.store._schema.Dialect`.
- Text a server or a person wrote (the server's name and title, the request,
  the answer, the audit detail) is kept as JSON text with every non-ASCII
  character escaped, so any string (control characters, lone surrogates,
  NUL) round-trips unchanged on every engine; it is escaped where it is shown.
- An answer is one conditional update (pending -> answered) in a transaction
  that also appends its audit row: a second answer, from any process, gets
  :class:`~host_receiver.errors.AlreadyAnswered`.
- Every change of an item (added, answered, closed) is announced: an inbox
  that serves the store (``inbox serve``) waits for the next one with
  :meth:`Store.wait_change` and reads the pending items again (the same
  LISTEN/NOTIFY on PostgreSQL, reading every :data:`POLL_INTERVAL` seconds on
  SQLite).
- The owner of an item learns of its answer through :meth:`Store.wait_answer`:
  at once for an answer given in this process; through PostgreSQL's
  LISTEN/NOTIFY from another one, reading again every
  :data:`NOTIFY_FALLBACK_POLL` seconds in case a notification was lost; by
  reading every :data:`POLL_INTERVAL` seconds on SQLite.
- Within an open store (:func:`open_store`) one task reads for every waiter of
  the process: the items a notification named since its last read, in one
  query, and every waited item each poll period, in one query per
  :data:`READ_BATCH` of them, at most :data:`READS_AT_ONCE` reads at once (a
  thousand waiting items are not a thousand reads a second, each queued behind
  the others for a worker thread and a pool connection). After the LISTEN
  connection is opened again, every waited item is read again. A read that
  fails is logged and tried again with backoff: a waiter keeps waiting.

Fixed caps (docs/limits.md): ``POLL_INTERVAL``, ``NOTIFY_FALLBACK_POLL``, ``READ_BATCH``,
``READS_AT_ONCE``, ``READ_RETRY_MOST``, ``MAX_CHANNEL_URL``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, replace
from typing import Any, Protocol, cast

import anyio
from anyio.abc import TaskStatus

from host_receiver.errors import AlreadyAnswered, StoreError, StoreTooNew, UnknownItem
from host_receiver.sanitize import safe_id, safe_logger
from host_receiver.store._engines import Engine, Tx, open_engine
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

__all__ = ["ASKED_AGAIN", "NOTIFY_FALLBACK_POLL", "POLL_INTERVAL", "SCHEMA_VERSION", "Store", "open_store"]

logger = safe_logger(__name__)

#: The schema version this code writes (the number of migrations).
SCHEMA_VERSION = len(MIGRATIONS)
#: How often a waiter reads its item again on SQLite and in memory (seconds; docs/limits.md).
POLL_INTERVAL = 0.05
#: How often a waiter reads its item again on PostgreSQL, besides LISTEN/NOTIFY (seconds).
NOTIFY_FALLBACK_POLL = 1.0
#: The most waited items one read of the store's answer reader names (one query each).
READ_BATCH = 500
#: The most reads of waited items one process runs at once (those named meanwhile wait for the next).
READS_AT_ONCE = 4
#: The longest pause before the answer reader reads a failing store again (seconds).
READ_RETRY_MOST = 5.0
#: Why a call's pending item leaves the inbox when the call's input request is asked again (resumed).
ASKED_AGAIN = "the call was resumed and asks again"
#: The audit chain's first "previous" hash.
GENESIS = "0" * 64
#: What a person's or team's name may be: printable, no spaces, at most 64 characters.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}")
_VERDICTS = ("session", "always", "never")
_ITEM_COLUMNS = (
    "id, host, server_name, server_title, server_identity, kind, payload, routed_to, status, created, "
    "expires, session, lease_expires, answer, answered_by, answered_from, answered_at, reason, "
    "call_id, call_key"
)
_AUDIT_COLUMNS = "seq, at, event, host, server, item, person, address, detail, previous, hash"
_CALL_COLUMNS = (
    "c.id, c.server_identity, c.address, c.method, c.target, c.arguments, c.input_requests, "
    "c.request_state, c.rounds_used, c.deadline, c.status, l.owner, l.expires, c.items, c.created"
)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"), sort_keys=True)


def _unjson(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def token_hash(token: str) -> str:
    """What the store keeps of a person's token: SHA-256 of it (the token is 32 random bytes)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def check_name(name: str, what: str) -> str:
    """``name`` if it is a valid person or team name, else :class:`StoreError` saying the rule."""
    if not NAME.fullmatch(name):
        raise StoreError(
            f"{what} name {json.dumps(name[:80])}: use 1 to 64 letters, digits and . _ @ + - (starting with "
            "a letter or digit)"
        )
    return name


def audit_hash(row: dict[str, Any]) -> str:
    """The hash of an audit row: SHA-256 over the canonical JSON of its fields and the previous hash."""
    fields = {
        k: row[k] for k in ("seq", "at", "event", "host", "server", "item", "person", "address", "detail")
    }
    fields["previous"] = row["previous"]
    return hashlib.sha256(_json(fields).encode()).hexdigest()


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


class SqlStore:
    """:class:`Store` over an :class:`~host_receiver.store._engines.Engine` (every backend)."""

    def __init__(self, url: StoreUrl, engine: Engine) -> None:
        self.url = url
        self._engine = engine
        self._waiters: dict[str, set[anyio.Event]] = {}
        #: Set while :meth:`_read_answers` runs: what each waiter found, the items to read next.
        self._reading = False
        self._found: dict[str, InboxItem] = {}
        self._due: set[str] = set()
        self._due_event = anyio.Event()
        #: How many changes were announced to this process, and the event the next one sets.
        self._changes = 0
        self._changed = anyio.Event()
        self._poll = NOTIFY_FALLBACK_POLL if engine.dialect.name == "postgresql" else POLL_INTERVAL

    async def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """One query in a read-only transaction (SQLite: no write lock taken)."""
        return await self._engine.run(lambda tx: tx.rows(sql, params), write=False)

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

    # --- the inbox ----------------------------------------------------------

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
            _json(server_name),
            _json(server_title),
            server_identity,
            kind,
            _json(payload),
            _json(list(item.routed_to)),
            "pending",
            now,
            expires,
            session,
            item.lease_expires,
            item.call_id,
            _json(item.call_key),  # the server's key: any text
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

        for changed in (*await self._engine.run(step), item.id):
            self._wake(changed)
        return item

    async def item(self, item_id: str) -> InboxItem | None:
        """The item ``item_id``, whatever its status; None when the store has none."""
        rows = await self._read(f"SELECT {_ITEM_COLUMNS} FROM inbox_items WHERE id = ?", (item_id,))
        return _item(rows[0]) if rows else None

    async def call_items(self, call_id: str) -> dict[str, InboxItem]:
        """The items that answer the input requests of the call ``call_id``, by the request's key
        (of several for one key, the answered one, else the newest)."""
        rows = await self._read(
            f"SELECT {_ITEM_COLUMNS} FROM inbox_items WHERE call_id = ? ORDER BY created, id", (call_id,)
        )
        found: dict[str, InboxItem] = {}
        for item in map(_item, rows):
            kept = found.get(item.call_key or "")
            if item.call_key is not None and (kept is None or kept.status != "answered"):
                found[item.call_key] = item
        return found

    async def pending_items(self, person: Person | None = None) -> list[InboxItem]:
        """The pending items, oldest first; with ``person``, only those routed to them or their teams."""
        rows = await self._read(
            f"SELECT {_ITEM_COLUMNS} FROM inbox_items WHERE status = ? ORDER BY created, id", ("pending",)
        )
        return [item for item in map(_item, rows) if item.visible_to(person)]

    async def recent_items(self, limit: int, person: Person | None = None) -> list[InboxItem]:
        """The ``limit`` newest items that are not pending any more, newest first; with ``person``,
        those routed to them or their teams among the ``10 * limit`` newest (routing is JSON text,
        filtered here as :meth:`pending_items` filters it)."""
        rows = await self._read(
            f"SELECT {_ITEM_COLUMNS} FROM inbox_items WHERE status <> ? ORDER BY created DESC, id DESC "
            "LIMIT ?",
            ("pending", limit if person is None else limit * 10),
        )
        return [item for item in map(_item, rows) if item.visible_to(person)][:limit]

    async def answer(
        self, item_id: str, answer: dict[str, Any], *, by: str | None, address: str | None
    ) -> InboxItem:
        """Answer a pending item: one conditional update and its audit row, in one transaction.
        :class:`~host_receiver.errors.AlreadyAnswered` when it is not pending any more,
        :class:`~host_receiver.errors.UnknownItem` when there is no such item."""
        now = time.time()

        def step(tx: Tx) -> InboxItem:
            changed = tx.execute(
                "UPDATE inbox_items SET status = ?, answer = ?, answered_by = ?, answered_from = ?, "
                "answered_at = ? WHERE id = ? AND status = ?",
                ("answered", _json(answer), by, address, now, item_id, "pending"),
            )
            if not changed:
                if tx.rows("SELECT 1 FROM inbox_items WHERE id = ?", (item_id,)):
                    raise AlreadyAnswered(item_id)
                raise UnknownItem(f"no item {safe_id(item_id)} in the store")
            item = _item(tx.rows(f"SELECT {_ITEM_COLUMNS} FROM inbox_items WHERE id = ?", (item_id,))[0])
            detail = {"kind": item.kind, "answer": answer, "server_identity": item.server_identity}
            self._append(tx, "answered", item.host, item.server_name, item_id, by, address, detail, now)
            if tx.dialect.notify:
                tx.rows(tx.dialect.notify, (item_id,))
            return item

        item = await self._engine.run(step)
        self._wake(item_id)
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
                f"SELECT {_ITEM_COLUMNS} FROM inbox_items WHERE id = ? AND status = ?", (item_id, "pending")
            )
            if not rows:
                return None
            item = _item(rows[0])
            if not item.routed_to:
                return item
            routed = tuple(dict.fromkeys([*item.routed_to, *names]))
            changed = tx.execute(
                "UPDATE inbox_items SET routed_to = ? WHERE id = ? AND status = ? AND routed_to = ?",
                (_json(list(routed)), item_id, "pending", rows[0][7]),
            )
            if not changed:
                return None
            if tx.dialect.notify:
                tx.rows(tx.dialect.notify, (item_id,))
            return replace(item, routed_to=routed)

        item = await self._engine.run(step)
        if item is not None:
            self._wake(item_id)
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
                f"SELECT {_ITEM_COLUMNS} FROM inbox_items WHERE status <> ? "
                f"AND id IN ({','.join('?' * len(batch))})",
                ("pending", *batch),
            )
            ended += map(_item, rows)
        return ended

    def _wake(self, item_id: str | None) -> None:
        """Wake the waiters of ``item_id`` (None: every waiter, to read again), and the change feed."""
        self._changes += 1
        self._changed.set()
        self._changed = anyio.Event()
        if self._reading:  # the reader reads for them
            self._due.update(self._waiters if item_id is None else [item_id])
            self._due_event.set()
            return
        for key in list(self._waiters) if item_id is None else [item_id]:
            for event in self._waiters.get(key, ()):
                event.set()

    # --- people -------------------------------------------------------------

    async def add_person(
        self, name: str, teams: Sequence[str] = (), *, channels: Sequence[str] = ()
    ) -> tuple[Person, str]:
        """Add ``name`` in ``teams`` with their notification ``channels`` (URLs); the person and their
        new token (shown once: only its hash is kept)."""
        check_name(name, "a person's")
        for team in teams:
            check_name(team, "a team's")
        kept = [_channel(name, url, n) for n, url in enumerate(channels, 1)]
        token = secrets.token_urlsafe(32)
        person = Person(name=name, teams=tuple(dict.fromkeys(teams)), created=time.time())

        def step(tx: Tx) -> None:
            if tx.rows("SELECT 1 FROM people WHERE name = ?", (name,)):
                raise StoreError(
                    f"{name} is already in the store: 'people remove {name}' first to give a new token"
                )
            tx.execute(
                "INSERT INTO people (name, token_hash, teams, created) VALUES (?,?,?,?)",
                (name, token_hash(token), _json(list(person.teams)), person.created),
            )
            for channel in kept:
                _insert_channel(tx, channel)

        await self._engine.run(step)
        return person, token

    async def add_channel(self, name: str, url: str) -> PersonChannel:
        """Add a notification channel (``url``, which holds secrets) to the person ``name``;
        :class:`StoreError` when there is nobody of that name."""
        channel = _channel(name, url, 1)

        def step(tx: Tx) -> None:
            if not tx.rows("SELECT 1 FROM people WHERE name = ?", (name,)):
                raise StoreError(f"nobody named {json.dumps(name[:80])} in the store (see 'people list')")
            _insert_channel(tx, channel)

        await self._engine.run(step)
        return channel

    async def clear_channels(self, name: str) -> int:
        """Remove every notification channel of ``name``; how many there were."""
        return int(
            await self._engine.run(
                lambda tx: tx.execute("DELETE FROM person_channels WHERE person = ?", (name,))
            )
        )

    async def channels(self, name: str | None = None) -> list[PersonChannel]:
        """The notification channels of ``name`` (None: everyone's), by person, oldest first."""
        sql = "SELECT id, person, url, added FROM person_channels"
        rows = await (
            self._read(f"{sql} WHERE person = ? ORDER BY added, id", (name,))
            if name is not None
            else self._read(f"{sql} ORDER BY person, added, id")
        )
        return [PersonChannel(str(r[0]), str(r[1]), str(r[2]), float(r[3])) for r in rows]

    async def people(self) -> list[Person]:
        """Everyone in the store, by name (never a token)."""
        rows = await self._read("SELECT name, teams, created FROM people ORDER BY name")
        return [Person(name=str(r[0]), teams=tuple(_unjson(r[1])), created=float(r[2])) for r in rows]

    async def remove_person(self, name: str) -> bool:
        """Remove ``name`` (their token stops working); False when there was nobody of that name."""

        def step(tx: Tx) -> bool:
            tx.execute("DELETE FROM person_channels WHERE person = ?", (name,))
            return bool(tx.execute("DELETE FROM people WHERE name = ?", (name,)))

        return await self._engine.run(step)

    async def authenticate(self, token: str) -> Person | None:
        """The person whose token is ``token``, or None."""
        wanted = token_hash(token)
        rows = await self._read(
            "SELECT name, teams, created, token_hash FROM people WHERE token_hash = ?", (wanted,)
        )
        for name, teams, created, kept in rows:
            if hmac.compare_digest(str(kept), wanted):
                return Person(name=str(name), teams=tuple(_unjson(teams)), created=float(created))
        return None

    # --- the notification queue ------------------------------------------------

    async def queue_notices(self, entries: Sequence[tuple[str, str, dict[str, Any]]]) -> int:
        """Queue notices: ``(channel, key, notice fields)`` each, once per channel and key (the
        idempotency key: a notice queued, claimed or sent before is not queued again); how many were new."""
        now = time.time()

        def step(tx: Tx) -> int:
            return sum(
                tx.execute(
                    "INSERT INTO notifications (channel, notice_key, notice, attempts, next_attempt, "
                    "created) VALUES (?,?,?,?,?,?) ON CONFLICT (channel, notice_key) DO NOTHING",
                    (channel, key, _json(notice), 0, now, now),
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
                    claimed.append(QueuedNotice(channel, str(key), _unjson(notice), int(attempts) + 1))
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
        columns = ", ".join(f"i.{column.strip()}" for column in _ITEM_COLUMNS.split(","))
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
            found += [(str(r[0]), _item(r[1:])) for r in rows]
        return found

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

    # --- decisions ------------------------------------------------------------

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

    # --- the audit log ----------------------------------------------------------

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
            lambda tx: self._append(tx, event, host, server, item, person, address, detail or {}, now)
        )

    @staticmethod
    def _append(
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
            (seq, at, event, host, _json(server), item, person, address, _json(detail), previous, digest),
        )
        return AuditRow(seq, at, event, host, server, item, person, address, detail, previous, digest)

    async def audit(self) -> list[AuditRow]:
        """The audit log, oldest first."""
        rows = await self._read(f"SELECT {_AUDIT_COLUMNS} FROM audit_log ORDER BY seq")
        return [
            AuditRow(
                int(r[0]),
                float(r[1]),
                str(r[2]),
                r[3],
                _unjson(r[4]),
                r[5],
                r[6],
                r[7],
                _unjson(r[8]),
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

    # --- continuable calls and leases --------------------------------------------

    async def save_call(self, call: ContinuableCall) -> None:
        """Keep ``call`` (a new one, or its next round: the same id is replaced)."""
        row = (
            call.id,
            call.server_identity,
            _json(call.address),
            call.method,
            _json(call.target),
            _json(call.arguments),
            _json(call.input_requests),
            _json(call.request_state),
            call.rounds_used,
            call.deadline,
            call.status,
            _json(call.items),
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
            _json(task.address),
            task.version,
            task.task_id,
            _json(task.tool),
            _json(task.arguments),
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
                address=_unjson(r[2]),
                version=str(r[3]),
                task_id=str(r[4]),
                tool=_unjson(r[5]),
                arguments=_unjson(r[6]),
                ttl_ms=None if r[7] is None else int(r[7]),
                created=float(r[8]),
                lease_owner=r[9],
                lease_expires=r[10],
                sent_keys=tuple(_unjson(r[11]) or ()),
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
            sent = list(_unjson(rows[0][0]) or [])
            sent += [key for key in keys if key not in sent]
            tx.execute("UPDATE remote_tasks SET sent_keys = ? WHERE id = ?", (_json(sent), task_id))
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


#: The longest channel URL kept (characters).
MAX_CHANNEL_URL = 2000


def _channel(person: str, url: str, number: int) -> PersonChannel:
    """A new channel of ``person``; :class:`StoreError` naming it by ``number``, never its URL."""
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme or not rest or len(url) > MAX_CHANNEL_URL or not url.isprintable():
        raise StoreError(
            f"channel {number} is not a URL (webhook+https://..., or an Apprise URL like mailto://...; "
            f"printable, at most {MAX_CHANNEL_URL} characters)"
        )
    return PersonChannel(id=secrets.token_hex(6), person=person, url=url, added=time.time())


def _insert_channel(tx: Tx, channel: PersonChannel) -> None:
    tx.execute(
        "INSERT INTO person_channels (id, person, url, added) VALUES (?,?,?,?)",
        (channel.id, channel.person, channel.url, channel.added),
    )


def _item(r: Sequence[Any]) -> InboxItem:
    return InboxItem(
        id=str(r[0]),
        host=str(r[1]),
        server_name=_unjson(r[2]),
        server_title=_unjson(r[3]),
        server_identity=str(r[4]),
        kind=str(r[5]),
        payload=_unjson(r[6]),
        routed_to=tuple(_unjson(r[7])),
        status=cast(ItemStatus, r[8]),
        created=float(r[9]),
        expires=r[10],
        session=str(r[11]),
        lease_expires=r[12],
        answer=_unjson(r[13]),
        answered_by=r[14],
        answered_from=r[15],
        answered_at=r[16],
        reason=r[17],
        call_id=r[18],
        call_key=_unjson(r[19]),
    )


def _call(r: Sequence[Any]) -> ContinuableCall:
    return ContinuableCall(
        id=str(r[0]),
        server_identity=str(r[1]),
        address=_unjson(r[2]),
        method=str(r[3]),
        target=_unjson(r[4]),
        arguments=_unjson(r[5]),
        input_requests=_unjson(r[6]),
        request_state=_unjson(r[7]),
        rounds_used=int(r[8]),
        deadline=r[9],
        status=str(r[10]),
        lease_owner=r[11],
        lease_expires=r[12],
        items=_unjson(r[13]),
        created=float(r[14]),
    )


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
