"""Notifications from ``inbox serve``: the people an item is routed to, and ``--notify``, told once
across every process that serves the store, through a queue in the store.

(About 450 lines, one idea: the store is the one queue and the one clock of every serving
process: what is queued there is sent once, whichever process reads it first.)

Rules:

- :class:`StoreQueue` is the :class:`~host_receiver.notify.NotificationQueue`
  of a store: a notice is a row keyed by its channel's name and its
  idempotency key (item id and event), so that however many processes queue
  it, it is queued once; a process sends it after claiming it by one
  conditional update (:meth:`Store.claim_notices`) for :func:`claim_seconds`
  (the notifier's pacing, attempts and backoff); it is marked sent when
  delivered or given up. Each channel is sent by one process at a time: its
  lease in the store (:meth:`Store.claim`, renewed at each take, lasting as
  long as a claim), so that a person's pacing (one message per ``every``)
  holds across processes. A process that stops gives its claims and leases
  back; one that dies holds them until they run out. A notice is never lost
  with a process (at least once). Each process reads which channels have
  notices it may claim every :data:`QUEUE_POLL` seconds.
- :class:`FleetNotifier` reads the store's change feed
  (:meth:`Store.wait_changed_items`: after each change the items it named, or
  every pending item when the store cannot name them, as the board does): each
  pending item it has not queued yet (the pending ones at start too: nothing
  added while no process served is missed) is queued as ``item.waiting`` for the ``--notify``
  channels and for the channels of each person it is routed to by name or
  team (an item routed to everyone goes to the ``--notify`` channels only).
  A ``--notify`` channel's name in the queue is a hash of its URL, so that
  processes given the same URL send it once; a person's is ``person:NAME:ID``.
  Each process serves every person's channel that has notices queued, with
  the notifier's workers (one per channel, retries, batching).
- With ``escalate_after`` and ``escalate_to`` (people's or teams' names), an
  item still pending that long is routed to them as well
  (:meth:`Store.widen_routing`, which every process may do: it adds each name
  once) and ``item.escalated`` is queued for their channels (once per channel).
- With ``remind_every``, a pending item's ``n``-th ``item.reminder`` (key
  ``{id}.item.reminder.{n}``) is queued ``n`` periods after it came, for the
  channels its ``item.waiting`` goes to (routing as it is now); one that fell
  due while no process served is not queued late.
- When an item ends answered or expired, ``item.answered`` or ``item.expired``
  is queued for each channel told that it waits (:meth:`Store.told_of_ended`,
  read when an item left the pending ones, and at start: an end while no
  process served is told too). A withdrawn item is told to nobody.
- With ``links`` (:class:`~host_receiver.web._links.SignedLinks`), each notice's
  link is signed as it is taken to be sent, for the channel's person (a
  ``--notify`` channel's for nobody in particular); the queue keeps plain links.
- A store that fails meanwhile is read again after a pause that doubles up to
  :data:`RETRY_MOST` seconds; a person's channel URL that is not valid is
  logged once, redacted, and its notices are left queued.

- A sent notice is kept while its item is pending (so that it is not queued
  again), then :data:`KEEP_SENT` seconds; each process prunes them every
  :data:`PRUNE_EVERY` seconds (:meth:`Store.prune_notices`).

Fixed caps (docs/limits.md): ``KEEP_SENT``, ``PRUNE_EVERY``.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace

import anyio

from host_receiver.errors import ChannelError, StoreError
from host_receiver.notify import Channel, Notice, Notifier, channel_for
from host_receiver.notify import Event as NoticeEvent
from host_receiver.notify._channels import ATTEMPT_TIMEOUT
from host_receiver.sanitize import safe_logger
from host_receiver.store import InboxItem, Person, PersonChannel, Store
from host_receiver.web._board import RETRY_MOST
from host_receiver.web._items import label
from host_receiver.web._links import SignedLinks

__all__ = [
    "KEEP_SENT",
    "PRUNE_EVERY",
    "QUEUE_POLL",
    "FleetNotifier",
    "StoreQueue",
    "claim_seconds",
    "serve_channel_name",
]

logger = safe_logger("host_receiver.notify")

#: How often a process looks in the store for notices it may claim (another process stopped; seconds).
QUEUE_POLL = 0.5
#: The kind of a channel's lease in the store's leases table.
LEASE_KIND = "notify"
#: How long a sent notice of an item that ended is kept, and how often they are pruned (seconds).
KEEP_SENT = 86_400.0
PRUNE_EVERY = 3_600.0


def claim_seconds(notifier: Notifier) -> float:
    """How long a claim lasts: the pacing, every attempt and every backoff of one delivery, and a margin."""
    backoff = notifier.backoff * ((1 << max(0, notifier.attempts - 1)) - 1)
    return notifier.every + notifier.attempts * ATTEMPT_TIMEOUT + backoff + 30.0


def serve_channel_name(url: str) -> str:
    """A ``--notify`` channel's name in the queue: the same for the same URL in every process; the
    URL is not in it (a SHA-256 of it)."""
    return "notify:" + hashlib.sha256(url.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class StoreQueue:
    """A :class:`~host_receiver.notify.NotificationQueue` in the store (module rules); ``owner``
    names this process's claims. Run :meth:`run` in a task group; :meth:`aclose` at the end."""

    def __init__(
        self,
        store: Store,
        *,
        owner: str,
        claim: float,
        poll: float = QUEUE_POLL,
        prepare: Callable[[str, Notice], Notice] | None = None,
    ) -> None:
        self.store = store
        self.owner = owner
        self.claim = claim
        self.poll = poll
        #: What is done to a notice of a channel as it is taken to be sent (its link signed).
        self.prepare = prepare
        self._unsaved: list[tuple[str, str, dict[str, object]]] = []
        self._sent: dict[str, list[str]] = {}
        self._dirty = anyio.Event()
        self._arrived: dict[str, anyio.Event] = {}
        self._lock = anyio.Lock()
        #: The channels whose lease this process took (it sends their notices, paced, until it stops).
        self._leased: set[str] = set()

    def put(self, channel: str, notice: Notice) -> None:
        self._unsaved.append((channel, notice.key, notice.fields()))
        self._dirty.set()
        self.wake(channel)

    def wake(self, channel: str) -> None:
        """Tell ``channel``'s worker that something was queued for it (by this process)."""
        self._arrived.pop(channel, anyio.Event()).set()

    async def take(self, channel: str) -> list[Notice]:
        pause = 0.1
        while True:
            arrived = self._arrived.setdefault(channel, anyio.Event())
            try:
                await self.flush()
                claimed = []
                if await self.store.claim(LEASE_KIND, channel, self.owner, self.claim):
                    self._leased.add(channel)
                    claimed = await self.store.claim_notices(channel, self.owner, self.claim)
            except StoreError as exc:
                logger.warning("notifications: cannot read the store (%s); again in %.1f s", exc, pause)
                await anyio.sleep(pause)
                pause = min(pause * 2, RETRY_MOST)
                continue
            notices: list[Notice] = []
            for queued in claimed:
                try:
                    notice = Notice.from_fields(queued.notice)
                    notices.append(self.prepare(channel, notice) if self.prepare else notice)
                except ValueError as exc:
                    logger.warning("notification %s left out: %s", queued.key, exc)
                    self._sent.setdefault(channel, []).append(queued.key)
            if notices:
                return notices
            await arrived.wait()  # something queued here, or found by the poll (:meth:`run`)

    def done(self, channel: str, notices: Sequence[Notice]) -> None:
        self._sent.setdefault(channel, []).extend(notice.key for notice in notices)
        self._dirty.set()

    async def drained(self, channel: str) -> None:
        """What this process queued is in the store (which keeps it across restarts): at once after that."""
        await self.flush()

    async def flush(self) -> None:
        """Write what was queued and sent meanwhile to the store (kept to write again if it fails)."""
        async with self._lock:
            unsaved, self._unsaved = self._unsaved, []
            sent, self._sent = self._sent, {}
            try:
                await self.store.queue_notices(unsaved)
                unsaved = []
                while sent:
                    channel, keys = next(iter(sent.items()))
                    await self.store.finish_notices(channel, keys, self.owner)
                    del sent[channel]
            finally:
                self._unsaved[:0] = unsaved
                for channel, keys in sent.items():
                    self._sent.setdefault(channel, [])[:0] = keys

    async def run(self) -> None:
        """Write to the store as soon as something was queued or sent, and wake the channels with
        notices this process may claim every ``poll`` seconds (until cancelled)."""
        async with anyio.create_task_group() as group:
            group.start_soon(self._poll)
            await self._write()

    async def _poll(self) -> None:
        while True:
            await anyio.sleep(self.poll)
            try:
                due = await self.store.queued_channels(self.owner)
            except StoreError:
                continue  # said by the writer and the takers; the next poll reads again
            for channel in due:
                if channel in self._arrived:  # a worker waits for it
                    self.wake(channel)

    async def _write(self) -> None:
        pause = 0.1
        while True:
            await self._dirty.wait()
            self._dirty = anyio.Event()
            try:
                await self.flush()
                pause = 0.1
            except StoreError as exc:
                logger.warning("notifications: cannot write the store (%s); again in %.1f s", exc, pause)
                self._dirty.set()
                await anyio.sleep(pause)
                pause = min(pause * 2, RETRY_MOST)

    async def aclose(self) -> None:
        """Write what waits, then give this process's claims back (another process sends them)."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(5.0):
            try:
                await self.flush()
                await self.store.release_notices(self.owner)
                for channel in sorted(self._leased):
                    await self.store.release(LEASE_KIND, channel, self.owner)
            except StoreError as exc:
                logger.warning("notifications: cannot give the claims back (%s); they run out", exc)


class FleetNotifier:
    """``inbox serve``'s notifications (module rules): ``urls`` are its ``--notify`` channels (checked
    before: :func:`~host_receiver.notify.channel_for`); ``link`` makes an item's link from its id."""

    def __init__(
        self,
        store: Store,
        urls: Sequence[str],
        *,
        environ: Mapping[str, str],
        every: float = 30.0,
        attempts: int = 5,
        backoff: float = 1.0,
        poll: float = QUEUE_POLL,
        escalate_after: float | None = None,
        escalate_to: Sequence[str] = (),
        remind_every: float | None = None,
        links: SignedLinks | None = None,
    ) -> None:
        self.store = store
        self.escalate_after = escalate_after
        self.escalate_to = tuple(escalate_to)
        self._escalated: set[str] = set()
        #: Seconds between reminders of a pending item (None: none); the last one queued of each item.
        self.remind_every = remind_every
        self._reminded: dict[str, int] = {}
        #: Signs each notice's link as it is sent (``--notify-links signed``; None: plain links).
        self.links = links
        self.environ = dict(environ)
        self.notifier = Notifier([], every=every, attempts=attempts, backoff=backoff, drain=0.0)
        self.queue = StoreQueue(
            store,
            owner=secrets.token_hex(8),
            claim=claim_seconds(self.notifier),
            poll=poll,
            prepare=self._sign if links is not None else None,
        )
        self.notifier.queue = self.queue
        self._own = {
            serve_channel_name(url): channel_for(url, number, environ=self.environ)
            for number, url in enumerate(urls, 1)
        }  # a URL given twice is one channel
        self._refused: set[str] = set()
        self.origin: str | None = None

    @asynccontextmanager
    async def running(self, origin: str) -> AsyncIterator[FleetNotifier]:
        """Notify for the block; ``origin`` is where the inbox is reached (the items' links)."""
        self.origin = origin
        try:
            async with self.notifier, anyio.create_task_group() as group:
                for name, channel in self._own.items():
                    self.notifier.add(channel, name)
                group.start_soon(self.queue.run)
                group.start_soon(self._feed)
                try:
                    yield self
                finally:
                    group.cancel_scope.cancel()
        finally:
            await self.queue.aclose()

    def notice(
        self, item: InboxItem, event: NoticeEvent = "item.waiting", *, reminder: int | None = None
    ) -> Notice:
        """The ``event`` notice of a stored item (server text escaped); the ``reminder``-th reminder
        is dated when it fell due."""
        title = item.server_title
        server = label(item.server_name) + (f" ({label(title)})" if title else "")
        link = f"{self.origin.rstrip('/')}/items/{item.id}" if self.origin else None
        at = None if event == "item.waiting" else time.time()
        if reminder and self.remind_every is not None:
            at = item.created + reminder * self.remind_every
        return Notice(
            event, item.id, item.kind, server, label(item.host), item.created, item.expires, link,
            reminder=reminder, at=at,
        )  # fmt: skip

    def _sign(self, channel: str, notice: Notice) -> Notice:
        """``notice`` as ``channel`` sends it: its link signed for the channel's person (a
        ``--notify`` channel's for nobody in particular), but that of an item that ended."""
        if self.links is None or notice.link is None or notice.event in ("item.answered", "item.expired"):
            return notice
        person = channel.split(":")[1] if channel.startswith("person:") else None
        return replace(notice, link=self.links.sign(notice.link, notice.id, person))

    async def _feed(self) -> None:
        """Follow the store's change feed (module rules): every pending item read at first, after a
        store error and when the store cannot name what changed; else only the items named."""
        seen, pending, pause, first, pruned = -1, dict[str, InboxItem](), 0.1, True, -PRUNE_EVERY
        while True:
            seen, named = await self.store.wait_changed_items(seen)
            try:
                if named is None:
                    now = {item.id: item for item in await self.store.pending_items()}
                    ended = first or bool(pending.keys() - now.keys())
                else:
                    now, ended = dict(pending), False
                    for item in await self.store.changed_items(named):
                        if item.status == "pending":
                            now[item.id] = item
                        elif now.pop(item.id, None) is not None:
                            ended = True
                fresh = sorted(
                    (i for i in now.values() if i.id not in pending), key=lambda i: (i.created, i.id)
                )
                if fresh or first:  # at first: what was queued before this process started too
                    channels = await self.store.channels()
                    await self._queue(fresh, await self.store.people(), channels)
                    await self._serve(await self.store.queued_channels(), channels)
                if self.escalate_after is not None:
                    await self._escalate(list(now.values()), time.time() - self.escalate_after)
                if self.remind_every is not None:
                    await self._remind(list(now.values()), time.time())
                if ended:  # at first too: what ended while no process served
                    await self._tell_ended()
                pending, pause, first = now, 0.1, False
                if anyio.current_time() >= pruned + PRUNE_EVERY:
                    await self.store.prune_notices(time.time() - KEEP_SENT)
                    pruned = anyio.current_time()
            except StoreError as exc:
                logger.warning("notifications: cannot read the store (%s); again in %.1f s", exc, pause)
                await anyio.sleep(pause)
                pause = min(pause * 2, RETRY_MOST)
                seen = -1  # what changed meanwhile is read with every pending item

    async def _queue(
        self,
        items: Sequence[InboxItem],
        people: Sequence[Person],
        channels: Sequence[PersonChannel],
        reminders: Mapping[str, int] | None = None,
    ) -> None:
        """Queue each item's ``item.waiting`` (with ``reminders``, the item's reminder of that
        number) for the ``--notify`` channels and its people's."""
        theirs: dict[str, list[PersonChannel]] = {}
        for channel in channels:
            theirs.setdefault(channel.person, []).append(channel)
        entries: list[tuple[str, str, dict[str, object]]] = []
        for item in items:
            if reminders is None:
                notice = self.notice(item)
            else:
                notice = self.notice(item, "item.reminder", reminder=reminders[item.id])
            names = list(self._own)
            if item.routed_to:
                for person in people:
                    if item.visible_to(person):
                        names += [channel.queue_name for channel in theirs.get(person.name, ())]
            entries += [(name, notice.key, notice.fields()) for name in names]
        await self.store.queue_notices(entries)
        for name in {name for name, _, _ in entries}:
            self.queue.wake(name)

    async def _escalate(self, pending: Sequence[InboxItem], before: float) -> None:
        """Route each item that came before ``before`` to the ``--escalate-to`` people and teams as well
        (a store update: idempotent), and queue its ``item.escalated`` for their channels."""
        due = [item for item in pending if item.created <= before and item.id not in self._escalated]
        if not due:
            return
        people, channels = await self.store.people(), await self.store.channels()
        reached = [p for p in people if {p.name, *p.teams} & set(self.escalate_to)]
        names = {p.name for p in reached}
        theirs = [channel for channel in channels if channel.person in names]
        entries: list[tuple[str, str, dict[str, object]]] = []
        for item in due:
            widened = await self.store.widen_routing(item.id, self.escalate_to)
            self._escalated.add(item.id)
            if widened is None:
                continue  # answered or ended meanwhile
            notice = self.notice(widened, "item.escalated")
            entries += [(channel.queue_name, notice.key, notice.fields()) for channel in theirs]
        await self.store.queue_notices(entries)
        await self._serve(sorted({name for name, _, _ in entries}), channels)
        for name in {name for name, _, _ in entries}:
            self.queue.wake(name)

    async def _remind(self, pending: Sequence[InboxItem], now: float) -> None:
        """Queue the reminder due of each pending item (the ``n``-th once ``n`` periods passed; one
        missed while no process served is not sent late, the next one is), once per channel."""
        assert self.remind_every is not None
        due = {item.id: int((now - item.created) // self.remind_every) for item in pending}
        late = [item for item in pending if due[item.id] >= 1 and self._reminded.get(item.id) != due[item.id]]
        self._reminded = {item_id: n for item_id, n in self._reminded.items() if item_id in due}
        if not late:
            return
        channels = await self.store.channels()
        await self._queue(late, await self.store.people(), channels, reminders=due)
        await self._serve(await self.store.queued_channels(), channels)
        self._reminded.update((item.id, due[item.id]) for item in late)

    async def _tell_ended(self) -> None:
        """Queue ``item.answered`` or ``item.expired`` for each channel told that an item waits,
        once it was answered or expired (whichever process, even one that stopped since)."""
        told = await self.store.told_of_ended()
        if not told:
            return
        entries: list[tuple[str, str, dict[str, object]]] = []
        for name, item in told:
            notice = self.notice(item, "item.answered" if item.status == "answered" else "item.expired")
            if item.answered_at is not None:
                notice = replace(notice, at=item.answered_at)
            entries.append((name, notice.key, notice.fields()))
        await self.store.queue_notices(entries)
        await self._serve(sorted({name for name, _ in told}), await self.store.channels())
        for name in {name for name, _ in told}:
            self.queue.wake(name)

    async def _serve(self, queued: Sequence[str], channels: Sequence[PersonChannel]) -> None:
        """Start a worker for each person's channel that has notices queued and none yet."""
        urls = {channel.queue_name: channel for channel in channels}
        for name in queued:
            found = urls.get(name)
            if found is None or self.notifier.serves(name) or name in self._refused:
                continue  # another process's --notify channel, a channel removed, or served
            try:
                channel: Channel = channel_for(found.url, 1, environ=self.environ)
            except ChannelError as exc:
                self._refused.add(name)
                logger.warning("notifications to %s's channel cannot be sent: %s", found.person, exc)
                continue
            channel.label = f"{found.person}'s {channel.label}"
            self.notifier.add(channel, name)
