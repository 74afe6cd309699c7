"""What a notification says: one :class:`Notice` per event of an item, and the messages made of them.

Rules:

- The five events are :data:`EVENTS`; a notice's idempotency key is its item
  id and event (a reminder's number too), sent as the Standard Webhooks
  ``webhook-id``.
- Everything a server wrote (its name, the content) has passed through
  :func:`~host_receiver.sanitize.safe_text` before it is in a notice; a notice
  holds no request content unless the host asked for it (``content``).
- A message for a person (:func:`message`) is plain text: a title and a body
  of short lines, one notice each, at most :data:`MAX_LISTED` of them listed.

Fixed caps (docs/limits.md): ``MAX_LISTED``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Literal

Event = Literal["item.waiting", "item.reminder", "item.escalated", "item.expired", "item.answered"]
EVENTS: tuple[Event, ...] = (
    "item.waiting",
    "item.reminder",
    "item.escalated",
    "item.expired",
    "item.answered",
)
#: The most notices one message for a person lists (the rest are counted).
MAX_LISTED = 10

_WHAT = {
    "sampling": "a sampling request to approve",
    "result": "a sampling result to review",
    "form": "a form to fill in",
    "url": "a link to open",
}
_HEADLINE = {
    "item.waiting": "waits for you",
    "item.reminder": "still waits for you",
    "item.escalated": "waits for you (escalated)",
    "item.expired": "expired: nobody answered in time",
    "item.answered": "was answered",
}


@dataclass(frozen=True)
class Notice:
    """One event of one inbox item, as a channel sends it (server text already made safe)."""

    event: Event
    id: str
    kind: str
    server: str
    host: str
    created: float
    expires: float | None
    link: str | None
    #: The request's content, cut and escaped; only when the host sends content.
    content: str | None = None
    #: Which reminder this is (1, 2, ...), for the idempotency key.
    reminder: int | None = None
    #: When the event happened (seconds since the epoch; None: when the item was created).
    at: float | None = None

    @property
    def key(self) -> str:
        """The idempotency key: the item id and the event (and a reminder's number)."""
        return f"{self.id}.{self.event}" + (f".{self.reminder}" if self.reminder else "")

    @property
    def summary(self) -> str:
        """One line without the request's content: who asks for what, and what happened."""
        line = f"{self.server} sent {_WHAT.get(self.kind, 'a request')}; it {_HEADLINE[self.event]}"
        return f"{line}: {self.content}" if self.content else line

    def fields(self) -> dict[str, Any]:
        """The notice as JSON fields (what a store-backed queue keeps); :meth:`from_fields` reads them."""
        return asdict(self)

    @classmethod
    def from_fields(cls, fields: dict[str, Any]) -> Notice:
        """The notice :meth:`fields` gave; ValueError when ``fields`` are not one."""
        if fields.get("event") not in EVENTS:
            raise ValueError("not a notice: no known event")
        try:
            return cls(**fields)
        except TypeError as exc:
            raise ValueError(f"not a notice: {exc}") from None

    def payload(self) -> dict[str, Any]:
        """The webhook body: ``{"type", "timestamp", "data": {...}}`` (docs/notify.md)."""
        data = {
            "id": self.id,
            "kind": self.kind,
            "server": self.server,
            "host": self.host,
            "created": iso(self.created),
            "expires": iso(self.expires) if self.expires is not None else None,
            "summary": self.summary,
            "link": self.link,
        }
        when = self.at if self.at is not None else self.created
        return {"type": self.event, "timestamp": iso(when), "data": data}


def message(notices: Sequence[Notice]) -> tuple[str, str]:
    """A title and a plain text body telling a person about ``notices`` (one or a batch)."""
    if len(notices) == 1:
        notice = notices[0]
        return f"host-receiver: {notice.server} {_HEADLINE[notice.event]}", _lines(notice)
    waiting = sum(n.event in ("item.waiting", "item.reminder", "item.escalated") for n in notices)
    title = (
        f"host-receiver: {waiting} requests wait for you"
        if waiting
        else f"host-receiver: {len(notices)} updates"
    )
    listed = [f"- {_lines(n, compact=True)}" for n in notices[:MAX_LISTED]]
    if len(notices) > MAX_LISTED:
        listed.append(f"- and {len(notices) - MAX_LISTED} more")
    return title, f"{title.removeprefix('host-receiver: ')}:\n" + "\n".join(listed)


def _lines(notice: Notice, *, compact: bool = False) -> str:
    expires = f"expires {iso(notice.expires)}" if notice.expires is not None else "never expires"
    parts = [notice.summary, f"on {notice.host}, {expires}"]
    if notice.link:
        parts.append(notice.link)
    return ("; " if compact else "\n").join(parts)


def iso(moment: float) -> str:
    """``moment`` in ISO 8601, UTC, to the second."""
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
