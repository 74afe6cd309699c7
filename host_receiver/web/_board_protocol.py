"""What the app serves (:class:`Board`), who signed in (:class:`Reader`), and a host's own inbox
as a board (:class:`InboxBoard`); the store-backed board is :mod:`._board`."""

from __future__ import annotations

import hmac
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from anyio.streams.memory import MemoryObjectReceiveStream

from host_receiver.store import Person
from host_receiver.web._inbox import Event, Inbox


@dataclass(frozen=True, slots=True)
class Reader:
    """Who signed in: a person of the store, or None for the one token of a host's own inbox."""

    person: Person | None


class Board(Protocol):
    """What the app serves: the items one reader may see, their answers, a stream of changes."""

    @property
    def auth_delay(self) -> float: ...
    @property
    def allowed_hosts(self) -> set[str] | None: ...
    @property
    def stopped(self) -> str | None:
        """Why the event streams ended for good (the page then stops reconnecting); None meanwhile."""
        ...

    async def sign_in(self, token: str) -> Reader | None:
        """Who ``token`` is, or None when it is nobody's (constant time)."""
        ...

    async def recheck(self, reader: Reader) -> Reader | None:
        """Who a session's ``reader`` is now (their teams may have changed), or None when they may
        no longer sign in (removed)."""
        ...

    @property
    def public_url(self) -> str | None:
        """Where people reach the inbox (behind a proxy or load balancer), besides where it listens."""
        ...

    async def redeem_link(self, item_id: str, token: str) -> tuple[Reader, float] | None:
        """Who a signed link's ``token`` signs in, for item ``item_id`` alone, and until when; None
        when it does not."""
        ...

    async def state(self, reader: Reader) -> dict[str, Any]: ...
    async def get(self, reader: Reader, item_id: str) -> dict[str, Any]:
        """The item as the API shows it; UnknownItem when there is none the reader may see."""
        ...

    async def answer(
        self, reader: Reader, item_id: str, answer: dict[str, Any], *, by: str, address: str | None
    ) -> dict[str, Any]:
        """Answer an item; UnknownItem, AlreadyAnswered or InvalidAnswer (nothing changes)."""
        ...

    def events(self, reader: Reader) -> AbstractAsyncContextManager[MemoryObjectReceiveStream[Event]]: ...


class InboxBoard:
    """A host's own :class:`Inbox` as a :class:`Board`: one token, which sees everything."""

    def __init__(self, inbox: Inbox) -> None:
        self.inbox = inbox

    @property
    def auth_delay(self) -> float:
        return self.inbox.auth_delay

    @property
    def allowed_hosts(self) -> set[str] | None:
        return self.inbox.allowed_hosts

    @property
    def stopped(self) -> str | None:
        return "the host has stopped" if self.inbox.closed else None

    async def sign_in(self, token: str) -> Reader | None:
        return Reader(None) if hmac.compare_digest(token.encode(), self.inbox.token.encode()) else None

    async def recheck(self, reader: Reader) -> Reader | None:
        return reader

    @property
    def public_url(self) -> str | None:
        return self.inbox.public_url

    async def redeem_link(self, item_id: str, token: str) -> tuple[Reader, float] | None:
        until = self.inbox.redeem_link(item_id, token)
        return (Reader(None), until) if until is not None else None

    async def state(self, reader: Reader) -> dict[str, Any]:
        return self.inbox.state()

    async def get(self, reader: Reader, item_id: str) -> dict[str, Any]:
        return self.inbox.item_json(self.inbox.get(item_id))

    async def answer(
        self, reader: Reader, item_id: str, answer: dict[str, Any], *, by: str, address: str | None
    ) -> dict[str, Any]:
        return self.inbox.item_json(self.inbox.answer(item_id, answer, by=by))

    def events(self, reader: Reader) -> AbstractAsyncContextManager[MemoryObjectReceiveStream[Event]]:
        return self.inbox.events()
