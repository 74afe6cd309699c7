"""The schema as migrations in code, and the one small place where the SQL dialects differ.

Each migration is a list of statements that both SQLite and PostgreSQL run as
written (TEXT, BIGINT, DOUBLE PRECISION; no serial column: the audit log
numbers its rows itself). :data:`MIGRATIONS` only grows: a released entry is
never changed, a new schema is a new entry. The version a store is at is the
one row of ``store_schema``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MIGRATIONS", "POSTGRES", "SQLITE", "Dialect"]

#: The PostgreSQL channel an answered (or otherwise finished) item is announced on; payload: its id.
CHANNEL = "host_receiver_items"

MIGRATIONS: list[list[str]] = [
    # 1: the inbox, people, decisions, the audit log, continuable calls, remote tasks, leases.
    [
        """CREATE TABLE inbox_items (
            id TEXT PRIMARY KEY,
            host TEXT NOT NULL,
            server_name TEXT NOT NULL,
            server_title TEXT,
            server_identity TEXT NOT NULL,
            kind TEXT NOT NULL,
            payload TEXT NOT NULL,
            routed_to TEXT NOT NULL,
            status TEXT NOT NULL,
            created DOUBLE PRECISION NOT NULL,
            expires DOUBLE PRECISION,
            session TEXT NOT NULL,
            lease_expires DOUBLE PRECISION,
            answer TEXT,
            answered_by TEXT,
            answered_from TEXT,
            answered_at DOUBLE PRECISION,
            reason TEXT
        )""",
        "CREATE INDEX inbox_items_status ON inbox_items (status, created)",
        "CREATE INDEX inbox_items_session ON inbox_items (session, status)",
        """CREATE TABLE people (
            name TEXT PRIMARY KEY,
            token_hash TEXT NOT NULL UNIQUE,
            teams TEXT NOT NULL,
            created DOUBLE PRECISION NOT NULL
        )""",
        """CREATE TABLE decisions (
            server_identity TEXT NOT NULL,
            subject TEXT NOT NULL,
            verdict TEXT NOT NULL,
            session TEXT,
            updated DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (server_identity, subject)
        )""",
        """CREATE TABLE audit_log (
            seq BIGINT PRIMARY KEY,
            at DOUBLE PRECISION NOT NULL,
            event TEXT NOT NULL,
            host TEXT,
            server TEXT,
            item TEXT,
            person TEXT,
            address TEXT,
            detail TEXT NOT NULL,
            previous TEXT NOT NULL,
            hash TEXT NOT NULL
        )""",
        """CREATE TABLE continuable_calls (
            id TEXT PRIMARY KEY,
            server_identity TEXT NOT NULL,
            address TEXT NOT NULL,
            method TEXT NOT NULL,
            target TEXT NOT NULL,
            arguments TEXT,
            input_requests TEXT NOT NULL,
            request_state TEXT,
            rounds_used BIGINT NOT NULL,
            deadline DOUBLE PRECISION,
            status TEXT NOT NULL,
            items TEXT NOT NULL,
            created DOUBLE PRECISION NOT NULL
        )""",
        """CREATE TABLE remote_tasks (
            id TEXT PRIMARY KEY,
            identity TEXT NOT NULL,
            address TEXT NOT NULL,
            version TEXT NOT NULL,
            task_id TEXT NOT NULL,
            tool TEXT NOT NULL,
            arguments TEXT,
            ttl_ms BIGINT,
            created DOUBLE PRECISION NOT NULL
        )""",
        """CREATE TABLE leases (
            kind TEXT NOT NULL,
            id TEXT NOT NULL,
            owner TEXT NOT NULL,
            expires DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (kind, id)
        )""",
    ],
    # 2: an inbox item that answers an input request of a continuable call names the call and the key.
    [
        "ALTER TABLE inbox_items ADD COLUMN call_id TEXT",
        "ALTER TABLE inbox_items ADD COLUMN call_key TEXT",
        "CREATE INDEX inbox_items_call ON inbox_items (call_id)",
    ],
    # 3: a person's notification channels (URLs: secrets), and the queue of notifications to send.
    [
        """CREATE TABLE person_channels (
            id TEXT PRIMARY KEY,
            person TEXT NOT NULL,
            url TEXT NOT NULL,
            added DOUBLE PRECISION NOT NULL
        )""",
        "CREATE INDEX person_channels_person ON person_channels (person, added)",
        """CREATE TABLE notifications (
            channel TEXT NOT NULL,
            notice_key TEXT NOT NULL,
            notice TEXT NOT NULL,
            attempts BIGINT NOT NULL,
            next_attempt DOUBLE PRECISION NOT NULL,
            owner TEXT,
            claimed_until DOUBLE PRECISION,
            sent DOUBLE PRECISION,
            created DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (channel, notice_key)
        )""",
        "CREATE INDEX notifications_due ON notifications (sent, channel, next_attempt)",
    ],
    # 4: the store's own secrets (the key that signs inbox serve's links), made once, shared.
    [
        """CREATE TABLE store_secrets (
            name TEXT PRIMARY KEY,
            value TEXT NOT NULL,
            created DOUBLE PRECISION NOT NULL
        )""",
    ],
    # 5: the keys of a followed task's inputRequests already sent with tasks/update (a JSON list).
    [
        "ALTER TABLE remote_tasks ADD COLUMN sent_keys TEXT",
    ],
]


@dataclass(frozen=True, slots=True)
class Dialect:
    """What differs between the engines; every other SQL text is written once, with ``?`` placeholders."""

    name: str
    #: Run first in a transaction: SQLite takes the write lock at once (no upgrade deadlock).
    begin: str | None
    #: Serialises the writers of the audit chain and of migrations within a transaction.
    lock_writers: str | None
    #: Announces an item's change to listeners at commit (one parameter: the item id), or None.
    notify: str | None

    def sql(self, text: str) -> str:
        """``text`` with its ``?`` placeholders in this driver's style (our SQL has no other ``?``, ``%``)."""
        return text if self.name != "postgresql" else text.replace("?", "%s")


SQLITE = Dialect(name="sqlite", begin="BEGIN IMMEDIATE", lock_writers=None, notify=None)
POSTGRES = Dialect(
    name="postgresql",
    begin=None,  # psycopg opens the transaction itself
    # One constant key (``hr`` in ASCII) for the whole store: appends and migrations are rare enough.
    lock_writers="SELECT pg_advisory_xact_lock(26738)",
    notify=f"SELECT pg_notify('{CHANNEL}', ?)",
)
