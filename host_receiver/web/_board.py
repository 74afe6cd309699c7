"""The store-backed board: every host's items of a shared store, for ``host-receiver inbox serve``.

:class:`StoreBoard` is the :class:`~host_receiver.web._app.Board` the app serves
for a fleet (docs/fleet.md): several processes may serve one store at once.

Rules:

- Only people's tokens sign in (:meth:`Store.authenticate`), as the bearer
  token or through the sign-in link, and with ``links`` a signed link, for its
  one item (:mod:`._links`, :meth:`StoreBoard.redeem_link`); a page session is checked against the
  store at each request (a person removed is signed out, a changed team
  applies at once). A person sees and answers only the items
  routed to them or their teams (empty routing: everyone). For anyone else an
  item does not exist: 404 on get and answer, absent from lists and events.
- An answer is checked against the item's stored request JSON
  (:func:`~host_receiver.web._checks.check_answer`: 422 naming what is wrong,
  nothing written), then written by :meth:`Store.answer` (one conditional
  update and its audit row, with the person and the client's address): a
  second answer, from whichever process, is AlreadyAnswered (409).
- Events come from the store's change feed (:meth:`Store.wait_changed_items`):
  one task per process reads, after each change, the items the changes named
  (one query for them all: a change to one of a thousand pending items reads
  that one), or every pending item again when the store cannot name them
  (SQLite, the LISTEN connection opened again, a store error), and tells each
  listener what was added, routed to it as well, and resolved among the items
  it may see. A listener gets its snapshot before any change read after it
  came. A store that fails meanwhile is read again after a pause that doubles
  up to :data:`RETRY_MOST` seconds; nothing is lost (the next read finds it).
- Text a server or host wrote is kept as sent in the store; what is shown is
  escaped (the request JSON was escaped by the host that made it).

Fixed caps (docs/limits.md): ``RETRY_MOST``; ``HISTORY`` and ``BUFFER`` as :mod:`._inbox`'s.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from starlette.applications import Starlette

from host_receiver.errors import AlreadyAnswered, StoreError, UnknownItem
from host_receiver.sanitize import safe_id, safe_logger
from host_receiver.store import InboxItem, Store
from host_receiver.web import _serve
from host_receiver.web._app import build_app
from host_receiver.web._board_protocol import Reader
from host_receiver.web._checks import check_answer
from host_receiver.web._inbox import BUFFER, HISTORY, Event, _iso
from host_receiver.web._items import body, label
from host_receiver.web._links import SignedLinks

logger = safe_logger("host_receiver.web")

#: The longest pause before the change feed reads a failing store again (seconds).
RETRY_MOST = 5.0
_SCOPES = {"once": "approved once", "session": "approved for this session", "always": "always approved"}


@dataclass(eq=False)
class _Listener:
    reader: Reader
    send: MemoryObjectSendStream[Event]
    #: Events held until the listener's snapshot is sent (then ``None``: sent as they come).
    held: list[Event] | None = field(default_factory=list)


class StoreBoard:
    """The items of every host of ``store``, to people signed in with their tokens (module rules).

    ``auth_delay``: the pause before a 401.
    """

    def __init__(
        self,
        store: Store,
        *,
        auth_delay: float = 1.0,
        links: SignedLinks | None = None,
        public_url: str | None = None,
    ) -> None:
        self.store = store
        self.auth_delay = auth_delay
        #: The signed links it takes (``--notify-links signed``; None: none).
        self.links = links
        #: Where people reach it (``--public-url``): its links' origin, and a ``Host`` and ``Origin`` taken.
        self.public_url = public_url
        #: Set when served: where it listens (``http(s)://host:port``) and the ``Host`` headers taken.
        self.origin: str | None = None
        self.allowed_hosts: set[str] | None = None
        self._listeners: list[_Listener] = []
        #: Pending items a snapshot showed since the feed's last read (their end is told too).
        self._shown: set[str] = set()
        self._stopped: str | None = None

    @functools.cached_property
    def app(self) -> Starlette:
        """The ASGI app: the inbox's page and JSON API over the store."""
        return build_app(self)

    @asynccontextmanager
    async def serve(
        self, listen: str = "127.0.0.1:0", *, certfile: str | None = None, keyfile: str | None = None
    ) -> AsyncIterator[StoreBoard]:
        """Serve the page on ``listen`` (``HOST:PORT``, port 0: a free one; TLS with ``certfile`` and
        ``keyfile``) with the change feed running, for the block. OSError when it cannot listen."""
        seen = await self.store.wait_change(-1)  # the feed's first read, before anyone is served
        known = {item.id: item for item in await self.store.pending_items()}
        async with (
            _serve.serve(self, self.app, listen, certfile=certfile, keyfile=keyfile),
            anyio.create_task_group() as group,
        ):
            if self.public_url is not None and self.allowed_hosts is not None:
                self.allowed_hosts.add(self.public_url.partition("://")[2].split("/", 1)[0].lower())
            group.start_soon(self._feed, seen, known)
            try:
                yield self
            finally:
                group.cancel_scope.cancel()

    # --- the Board ---------------------------------------------------------------

    @property
    def stopped(self) -> str | None:
        return self._stopped

    def close(self) -> None:
        """End every listener's stream for good (the board stops)."""
        self._stopped = "the inbox has stopped"
        for listener in self._listeners:
            listener.send.close()
        self._listeners.clear()

    async def sign_in(self, token: str) -> Reader | None:
        person = await self.store.authenticate(token)
        return Reader(person) if person is not None else None

    async def recheck(self, reader: Reader) -> Reader | None:
        """The session's person as the store has them now; None once removed (``people remove``).
        A session of nobody in particular (a ``--notify`` channel's signed link: the only way to
        one here) stays so: it sees its one item alone."""
        if reader.person is None:
            return reader
        person = next((p for p in await self.store.people() if p.name == reader.person.name), None)
        return Reader(person) if person is not None else None

    async def redeem_link(self, item_id: str, token: str) -> tuple[Reader, float] | None:
        """Who a signed link signs in for item ``item_id`` (the person it was sent to, or nobody in
        particular for a ``--notify`` channel's) and until when: while the item is pending, the
        link's time is not up, and its person is still there and may see the item; else None."""
        granted = self.links.verify(item_id, token) if self.links is not None else None
        if granted is None:
            return None
        name, until = granted
        item = await self.store.item(item_id)
        if item is None or item.status != "pending":
            return None
        if name is None:
            return Reader(None), until
        person = next((p for p in await self.store.people() if p.name == name), None)
        if person is None or not item.visible_to(person):
            return None
        return Reader(person), until

    async def state(self, reader: Reader) -> dict[str, Any]:
        pending = await self.store.pending_items(reader.person)
        history = await self.store.recent_items(HISTORY, reader.person)
        return {"pending": [item_json(i) for i in pending], "history": [item_json(i) for i in history]}

    async def _visible(self, reader: Reader, item_id: str) -> InboxItem:
        item = await self.store.item(item_id)
        if item is None or not item.visible_to(reader.person):
            raise UnknownItem(f"no item {safe_id(item_id)}")
        return item

    async def get(self, reader: Reader, item_id: str) -> dict[str, Any]:
        return item_json(await self._visible(reader, item_id))

    async def answer(
        self, reader: Reader, item_id: str, answer: dict[str, Any], *, by: str, address: str | None
    ) -> dict[str, Any]:
        item = await self._visible(reader, item_id)
        if item.status != "pending":
            raise AlreadyAnswered(item_id)
        check_answer(item.kind, item.payload, answer)
        person = reader.person.name if reader.person is not None else None
        return item_json(await self.store.answer(item_id, answer, by=person, address=address))

    @asynccontextmanager
    async def events(self, reader: Reader) -> AsyncIterator[MemoryObjectReceiveStream[Event]]:
        """A listener's stream: its snapshot, then the items added and resolved that it may see."""
        send, receive = anyio.create_memory_object_stream[Event](BUFFER)
        listener = _Listener(reader, send)
        try:
            async with receive:
                if self._stopped is not None:
                    send.close()
                else:
                    self._listeners.append(listener)  # before the snapshot is read: nothing is missed
                    snapshot = await self.state(reader)
                    self._shown.update(item["id"] for item in snapshot["pending"])
                    send.send_nowait(("snapshot", snapshot))
                    for event in listener.held or ():
                        self._send(listener, event)
                    listener.held = None
                yield receive
        finally:
            if listener in self._listeners:
                self._listeners.remove(listener)
            send.close()

    # --- the change feed -----------------------------------------------------------

    async def _feed(self, seen: int, known: dict[str, InboxItem]) -> None:
        """Read what changed after each change the store announces after ``seen`` (``known``: the
        pending items of the reads before): the items the changes named and those a snapshot showed
        since, or every pending item when the store cannot name them; tell the listeners what was
        added (or routed to them as well), and what ended of the items known or shown pending."""
        pause = 0.1
        while True:
            seen, named = await self.store.wait_changed_items(seen)
            try:
                shown, self._shown = self._shown, set()
                if named is None:
                    fresh = {item.id: item for item in await self.store.pending_items()}
                    read = known.keys() | shown | fresh.keys()
                else:
                    read = set(named) | (shown - known.keys())
                    fresh = {item.id: item for item in await self.store.changed_items(read)}
                pending = {i: item for i, item in known.items() if i not in read}
                pending |= {i: item for i, item in fresh.items() if item.status == "pending"}
                for item in sorted(fresh.values(), key=lambda i: (i.created, i.id)):
                    before = known.get(item.id)
                    if item.status == "pending" and (before is None or before.routed_to != item.routed_to):
                        self._broadcast("added", item, before)
                for item_id in sorted(((known.keys() | shown) & read) - pending.keys()):
                    ended = fresh.get(item_id) or await self.store.item(item_id)
                    if ended is not None:
                        self._broadcast("resolved", ended)
            except StoreError as exc:
                self._shown |= shown
                logger.warning("inbox: cannot read the store (%s); again in %.1f s", exc, pause)
                await anyio.sleep(pause)
                pause = min(pause * 2, RETRY_MOST)
                seen = -1  # what changed meanwhile is read with every pending item
                continue
            known, pause = pending, 0.1

    def _broadcast(self, name: str, item: InboxItem, before: InboxItem | None = None) -> None:
        """Tell ``item`` to each listener who may see it (and, with ``before``, could not see that)."""
        shown = item_json(item)
        for listener in list(self._listeners):
            person = listener.reader.person
            if item.visible_to(person) and (before is None or not before.visible_to(person)):
                self._send(listener, (name, shown))

    def _send(self, listener: _Listener, event: Event) -> None:
        if listener.held is not None:
            listener.held.append(event)
            return
        try:
            listener.send.send_nowait(event)
        except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            if listener in self._listeners:  # fallen behind: its stream ends, the page reconnects
                self._listeners.remove(listener)
            listener.send.close()


def item_json(item: InboxItem) -> dict[str, Any]:
    """A stored item as the API shows it: :meth:`Inbox.item_json`'s fields, with its host and the
    person who answered (``person``)."""
    title = item.server_title
    by = {"withdrawn": "server", "expired": "timeout"}.get(item.status, item.answered_by)
    return {
        "id": item.id,
        "kind": item.kind,
        "host": label(item.host),
        "server": label(item.server_name),
        "serverTitle": label(title) if title else None,
        "taskId": None,
        "created": _iso(item.created),
        "expires": _iso(item.expires) if item.expires is not None else None,
        "status": "pending" if item.status == "pending" else "resolved",
        "outcome": outcome(item),
        "answered": _iso(item.answered_at) if item.answered_at is not None else None,
        "audit": None,
        "answeredBy": by,
        "person": label(item.answered_by) if item.answered_by else None,
        "request": item.payload,
    }


def outcome(item: InboxItem) -> str | None:
    """The history's word for how ``item`` ended (None while pending)."""
    if item.status == "pending":
        return None
    if item.status != "answered":
        return f"{item.status}: {body(item.reason)}" if item.reason else item.status
    answer = item.answer or {}
    action = answer.get("action")
    if action == "approve":
        return _SCOPES.get(str(answer.get("remember", "once")), "approved")
    if action == "never":
        return "refused from now on"
    if action == "send":
        return "sent, edited" if answer.get("text") is not None else "sent"
    words = {"refuse": "refused", "accept": "opened" if item.kind == "url" else "accepted"}
    words |= {"decline": "declined", "cancel": "cancelled"}
    return words.get(str(action), "answered")
