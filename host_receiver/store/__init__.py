"""The shared store: what a fleet of hosts keeps in one place (docs/fleet.md).

:func:`open_store` opens the :class:`Store` a ``--store`` URL names: ``memory``
(a SQLite database in this process's memory, the default: nothing outlives the
process), a SQLite file (``sqlite:///PATH`` or a path ending ``.db`` or
``.sqlite``: WAL and a busy timeout, for several processes of one machine) or
PostgreSQL (``postgresql://...``, the ``[postgres]`` extra: psycopg 3 and
psycopg_pool). It holds the inbox items and their answers, people (a hash of
each token, their notification channels), the queue of notifications,
remembered decisions, the hash-chained audit log, continuable calls, durable
remote tasks and leases; its schema is the migrations in ``_schema.py``,
applied on first use. :class:`SqlStore` (``_store.py``) is one class of a part
per concern, each a mixin over ``_core.py``: ``_items.py``, ``_waiting.py``,
``_people.py``, ``_notices.py``, ``_decisions.py``, ``_audit.py``,
``_calls.py``.

Every driver is synchronous and runs in a worker thread
(``anyio.to_thread.run_sync``), so the store serves asyncio and trio alike;
PostgreSQL's LISTEN/NOTIFY is read when ``anyio.wait_readable`` says its
socket has data.

This package imports only the base (``errors``, ``sanitize``, ``paths``,
``_identity``, ``protocol``): nothing of client/, people/, web/, receiver/ or
providers, so that all of them may build on it.
"""

from __future__ import annotations

from host_receiver.store._leases import LEASE_PERIODS, CallKeeping
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
from host_receiver.store._store import (
    ASKED_AGAIN,
    NOTIFY_FALLBACK_POLL,
    POLL_INTERVAL,
    SCHEMA_VERSION,
    SqlStore,
    Store,
    open_store,
)
from host_receiver.store._url import StoreUrl, parse_store_url

__all__ = [
    "ASKED_AGAIN",
    "LEASE_PERIODS",
    "NOTIFY_FALLBACK_POLL",
    "POLL_INTERVAL",
    "SCHEMA_VERSION",
    "AuditRow",
    "BrokenRow",
    "CallKeeping",
    "ContinuableCall",
    "Decision",
    "InboxItem",
    "ItemStatus",
    "Person",
    "PersonChannel",
    "QueuedNotice",
    "SqlStore",
    "Store",
    "StoreUrl",
    "StoredRemoteTask",
    "Verdict",
    "open_store",
    "parse_store_url",
]
