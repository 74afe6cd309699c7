"""Delivery that never holds up a request: a queue per channel, one worker per channel.

Rules:

- :meth:`Notifier.notify` only puts a notice in the :class:`NotificationQueue`
  (never waits); each channel's worker, in the notifier's task group, takes
  what waits for it. A failing or slow channel delays only itself.
- At least once: a notice leaves the queue when it is delivered or given up
  (:meth:`NotificationQueue.done`); a notice whose key (item id and event) is
  already waiting for the channel is not queued twice. :class:`MemoryQueue`
  keeps them in memory, at most :data:`MAX_QUEUED` per channel (the oldest
  dropped, with one log line); a store-backed queue keeps them across restarts
  behind the same interface.
- A person's channel (``batches``) gets at most one message per ``every``
  seconds: what arrives meanwhile goes out as one message ("5 requests wait
  for you: ..."). A webhook gets each event as its own POST, at once.
- When the notifier's block ends without error, what is still queued is sent
  at once (no pacing), for up to ``drain`` seconds; then the workers stop.
- An attempt that fails with ``retry`` (5xx, timeouts, refused connections)
  is tried again after ``backoff`` seconds, doubling, at most ``attempts``
  times in all; then the notices are given up with one warning naming the
  channel's redacted label, never its URL.

Fixed caps (docs/limits.md): ``MAX_QUEUED``.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Protocol

import anyio
import anyio.abc

from host_receiver._concurrency import background_task_group
from host_receiver.errors import DeliveryFailed
from host_receiver.notify._channels import Channel
from host_receiver.notify._events import Notice
from host_receiver.sanitize import safe_logger

logger = safe_logger("host_receiver.notify")

#: Notices waiting for one channel at most (the oldest are dropped beyond).
MAX_QUEUED = 1000


class NotificationQueue(Protocol):
    """Where notices wait for their channel (in memory now; a store can keep them across restarts)."""

    def put(self, channel: str, notice: Notice) -> None:
        """Queue ``notice`` for ``channel`` (once per key); never waits."""
        ...

    async def take(self, channel: str) -> list[Notice]:
        """Wait until something waits for ``channel``; return all that does (oldest first), still queued."""
        ...

    def done(self, channel: str, notices: Sequence[Notice]) -> None:
        """``notices`` were delivered or given up: they leave the queue."""
        ...

    async def drained(self, channel: str) -> None:
        """Return once nothing waits for ``channel`` (at once when nothing does)."""
        ...


class MemoryQueue:
    """A :class:`NotificationQueue` in memory (this process only)."""

    def __init__(self, limit: int = MAX_QUEUED) -> None:
        self._limit = limit
        self._waiting: dict[str, OrderedDict[str, Notice]] = {}
        self._arrived: dict[str, anyio.Event] = {}
        self._emptied: dict[str, anyio.Event] = {}

    def put(self, channel: str, notice: Notice) -> None:
        waiting = self._waiting.setdefault(channel, OrderedDict())
        if notice.key in waiting:
            return
        waiting[notice.key] = notice
        if len(waiting) > self._limit:
            waiting.popitem(last=False)
            logger.warning(
                "notifications for %s: more than %d waiting, the oldest dropped", channel, self._limit
            )
        self._arrived.setdefault(channel, anyio.Event()).set()

    async def take(self, channel: str) -> list[Notice]:
        while not self._waiting.get(channel):
            await self._arrived.setdefault(channel, anyio.Event()).wait()
            self._arrived[channel] = anyio.Event()
        return list(self._waiting[channel].values())

    def done(self, channel: str, notices: Sequence[Notice]) -> None:
        waiting = self._waiting.get(channel, OrderedDict())
        for notice in notices:
            waiting.pop(notice.key, None)
        if not waiting and channel in self._emptied:
            self._emptied.pop(channel).set()

    async def drained(self, channel: str) -> None:
        while self._waiting.get(channel):
            await self._emptied.setdefault(channel, anyio.Event()).wait()

    def waiting(self, channel: str) -> int:
        """How many notices wait for ``channel``."""
        return len(self._waiting.get(channel, ()))


class Notifier:
    """Sends notices to channels through a queue, one worker per channel: ``async with Notifier(...)``.

    ``channels`` are notified of every notice; ``escalation`` only of those sent to it
    (:meth:`notify` with ``escalate=True``). ``every``: seconds between two messages to a
    person's channel; ``attempts`` and ``backoff``: the retries (rules in the module docstring).
    """

    def __init__(
        self,
        channels: Sequence[Channel],
        *,
        escalation: Sequence[Channel] = (),
        every: float = 30.0,
        attempts: int = 5,
        backoff: float = 1.0,
        drain: float = 5.0,
        queue: NotificationQueue | None = None,
    ) -> None:
        self.channels = list(channels)
        self.escalation = list(escalation)
        self.every = every
        self.attempts = attempts
        self.backoff = backoff
        self.drain = drain
        self._draining = False
        self._pacing: set[anyio.CancelScope] = set()
        self.queue: NotificationQueue = queue if queue is not None else MemoryQueue()
        self._stack: AsyncExitStack | None = None
        #: Each channel's name in the queue (by ``id``): its place among those given, or as added.
        self._names = {id(c): f"{n}" for n, c in enumerate([*self.channels, *self.escalation], 1)}
        self._added: list[Channel] = []
        self._group: anyio.abc.TaskGroup | None = None

    def notify(self, notice: Notice, *, escalate: bool = False) -> None:
        """Queue ``notice`` for every channel (the escalation channels when ``escalate``); never waits."""
        for channel in self.escalation if escalate else self.channels:
            self.queue.put(self._key(channel), notice)

    def _key(self, channel: Channel) -> str:
        """The channel's name in the queue: its place among the notifier's channels (labels may repeat),
        or the name it was added with."""
        return self._names[id(channel)]

    def _every(self) -> list[Channel]:
        return [*self.channels, *self.escalation, *self._added]

    def add(self, channel: Channel, name: str) -> None:
        """Serve one more channel, whose notices the queue holds under ``name`` (a person's channel
        found in a store, or a channel whose name several processes share); inside the block only."""
        if self._group is None:
            raise RuntimeError("Notifier.add is for a notifier in use (async with)")
        if name in self._names.values():
            raise ValueError(f"a channel named {name!r} is served already")
        self._names[id(channel)] = name
        self._added.append(channel)
        self._group.start_soon(self._work, channel, name=f"notify {channel.label}")

    def serves(self, name: str) -> bool:
        """Whether a channel of this notifier has ``name`` in the queue."""
        return name in self._names.values()

    async def __aenter__(self) -> Notifier:
        async with AsyncExitStack() as stack:
            stack.push_async_callback(self._close_channels)
            group = await stack.enter_async_context(background_task_group())
            for channel in [*self.channels, *self.escalation]:
                group.start_soon(self._work, channel, name=f"notify {channel.label}")
            self._group = group
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> bool | None:
        stack, self._stack = self._stack, None
        assert stack is not None
        self._group = None
        if kind is None:
            await self._deliver_what_waits()
        return await stack.__aexit__(kind, error, trace)

    async def _deliver_what_waits(self) -> None:
        """Give the workers up to ``drain`` seconds to send what is queued (no pacing meanwhile)."""
        self._draining = True
        for pace in self._pacing:
            pace.cancel()
        with anyio.move_on_after(self.drain):
            for channel in self._every():
                await self.queue.drained(self._key(channel))

    async def _close_channels(self) -> None:
        with anyio.CancelScope(shield=True):
            for channel in self._every():
                await channel.aclose()

    async def _work(self, channel: Channel) -> None:
        key = self._key(channel)
        last = -math.inf
        while True:
            notices = await self.queue.take(key)
            if channel.batches and not self._draining:
                with anyio.CancelScope() as pace:
                    self._pacing.add(pace)
                    await anyio.sleep(max(0.0, last + self.every - anyio.current_time()))
                self._pacing.discard(pace)
                notices = await self.queue.take(key)  # what came meanwhile too
            await self._deliver(channel, notices)
            self.queue.done(key, notices)
            last = anyio.current_time()

    async def _deliver(self, channel: Channel, notices: list[Notice]) -> None:
        delay = self.backoff
        for attempt in range(1, self.attempts + 1):
            try:
                await channel.send(notices)
                return
            except Exception as exc:  # a channel's own failure must not stop the others
                if not isinstance(exc, DeliveryFailed):
                    exc = DeliveryFailed(f"the channel failed ({type(exc).__name__})", retry=False)
                if not exc.retry or attempt == self.attempts:
                    logger.warning(
                        "notification to %s given up after %d attempt%s: %s (%s)",
                        channel.label,
                        attempt,
                        "" if attempt == 1 else "s",
                        exc,
                        ", ".join(n.key for n in notices[:5]) + (" ..." if len(notices) > 5 else ""),
                    )
                    return
            await anyio.sleep(delay)
            delay *= 2
