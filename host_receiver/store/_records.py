"""What the store holds, as typed records (the rows of its tables)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "AuditRow",
    "BrokenRow",
    "ContinuableCall",
    "Decision",
    "InboxItem",
    "ItemStatus",
    "Person",
    "PersonChannel",
    "QueuedNotice",
    "StoredRemoteTask",
    "Verdict",
]

#: Where an inbox item is: waiting for a person, or how it left the inbox.
ItemStatus = Literal["pending", "answered", "withdrawn", "expired", "refused"]
#: A remembered decision: for the server's session, always, or never.
Verdict = Literal["session", "always", "never"]


@dataclass(frozen=True, slots=True)
class InboxItem:
    """A request waiting for a person (or how it ended). Every text a server wrote (``server_name``,
    ``server_title``, ``payload``) is kept as sent: escape it (``safe_text``) where it is shown."""

    id: str
    #: The host process (its name) that received the request.
    host: str
    server_name: str
    server_title: str | None
    #: The server's identity, as the CLI's consent names it.
    server_identity: str
    #: ``sampling``, ``form`` or ``url``, as the inbox names them.
    kind: str
    #: The request as received (JSON).
    payload: dict[str, Any]
    #: The people and teams who may see and answer it; empty: everyone of the store.
    routed_to: tuple[str, ...]
    status: ItemStatus
    created: float
    expires: float | None
    #: The host's session that owns the item, and until when its claim holds.
    session: str
    lease_expires: float | None
    answer: dict[str, Any] | None = None
    answered_by: str | None = None
    answered_from: str | None = None
    answered_at: float | None = None
    #: Why it left the inbox unanswered (withdrawn, expired, refused).
    reason: str | None = None
    #: The continuable call whose input request it answers, and that request's key (else None).
    call_id: str | None = None
    call_key: str | None = None

    def visible_to(self, person: Person | None) -> bool:
        """Whether ``person`` may see and answer it (None: no person, everything)."""
        if person is None or not self.routed_to:
            return True
        return bool({person.name, *person.teams} & set(self.routed_to))


@dataclass(frozen=True, slots=True)
class Person:
    """Someone who answers through the inbox; the store keeps only a hash of their token."""

    name: str
    teams: tuple[str, ...] = ()
    created: float = 0.0


@dataclass(frozen=True, slots=True)
class PersonChannel:
    """One of a person's notification channels. ``url`` holds secrets: never log or show it."""

    #: Random and never reused: the channel's name in the notification queue (``person:NAME:ID``).
    id: str
    person: str
    url: str = field(repr=False)
    #: When it was added (seconds since the epoch).
    added: float

    @property
    def queue_name(self) -> str:
        """The channel's name in the store's notification queue."""
        return f"person:{self.person}:{self.id}"


@dataclass(frozen=True, slots=True)
class QueuedNotice:
    """A notification in the store's queue, claimed for sending: the channel, the idempotency key
    (item id and event), the notice as JSON fields, and the attempts made at it so far."""

    channel: str
    key: str
    notice: dict[str, Any]
    attempts: int


@dataclass(frozen=True, slots=True)
class Decision:
    """A remembered answer for one server identity and one person or team (``team:NAME``, ``person:NAME``)."""

    server_identity: str
    subject: str
    verdict: Verdict
    #: For ``session``: the host session it holds for.
    session: str | None
    updated: float


@dataclass(frozen=True, slots=True)
class AuditRow:
    """One row of the append-only audit log; ``hash`` covers its fields and ``previous``."""

    seq: int
    at: float
    event: str
    host: str | None
    server: str | None
    item: str | None
    person: str | None
    address: str | None
    detail: dict[str, Any]
    previous: str
    hash: str


@dataclass(frozen=True, slots=True)
class BrokenRow:
    """Where the audit chain breaks: the row's number and what is wrong with it."""

    seq: int
    problem: str


@dataclass(frozen=True, slots=True)
class ContinuableCall:
    """A call whose 2026-07-28 input round waits for a person, kept so that any process may continue it."""

    id: str
    server_identity: str
    #: How to reach the server again, without secrets (as ``server_address`` of the remote tasks says it).
    address: dict[str, Any]
    #: ``tools/call``, ``prompts/get`` or ``resources/read``.
    method: str
    #: The tool or prompt name, or the resource URI.
    target: str
    arguments: dict[str, Any] | None
    #: The server's input requests of the round that waits, by key.
    input_requests: dict[str, Any]
    request_state: str | None
    rounds_used: int
    deadline: float | None
    status: str = "waiting"
    lease_owner: str | None = None
    lease_expires: float | None = None
    #: The inbox items that answer its input requests, by key.
    items: dict[str, str] = field(default_factory=dict)
    created: float = 0.0


@dataclass(frozen=True, slots=True)
class StoredRemoteTask:
    """A server's task this host follows (today's ``--task-store`` record, in the shared store)."""

    id: str
    identity: str
    address: dict[str, Any]
    version: str
    task_id: str
    tool: str
    arguments: dict[str, Any] | None
    ttl_ms: int | None
    created: float
    lease_owner: str | None = None
    lease_expires: float | None = None
    #: The keys of its ``inputRequests`` already sent with ``tasks/update`` (never sent again).
    sent_keys: tuple[str, ...] = ()
