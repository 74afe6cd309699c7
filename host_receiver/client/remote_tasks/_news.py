"""What a server says unasked about its tasks, and which of it is news: :class:`TaskNews`.

Rules (both eras: 2025-11-25 ``notifications/tasks/status``, the tasks
extension's ``notifications/tasks`` and its subscriptions' acknowledgements):

- A notification is taken only when it is news (:func:`news_of`): a state
  equal to the one already seen (a notification repeated, or one that came
  after a poll saw that state), one older than it (``lastUpdatedAt``), or
  anything after a terminal state is dropped; a terminal state is always
  taken, so no terminal status is lost.
- A notification about a task before it is followed (it may come before the
  ``tools/call`` answer that creates the task is read) is kept, the newest
  per task for :data:`EARLY_NEWS` tasks, and taken when following begins.
- An acknowledgement (``_meta`` subscriptionId: the listen request's id)
  that lists the task makes the task's follower wait for news longer
  (:mod:`._modern`); one that leaves it out declines. A connection holds
  :data:`MAX_SUBSCRIPTIONS` open at once.

Fixed caps (docs/limits.md): ``EARLY_NEWS``, ``MAX_SUBSCRIPTIONS``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio

from host_receiver.client.remote_tasks._polls import instant
from host_receiver.errors import BadResult
from host_receiver.protocol.modern import SUBSCRIPTION_ID_KEY, RemoteTask, remote_task
from host_receiver.protocol.types import RequestId
from host_receiver.sanitize import safe_logger

__all__ = ["Subscription", "TaskNews", "news_of"]

logger = safe_logger("host_receiver.client.connection")

#: Tasks not followed yet whose newest status notification is kept until they are.
EARLY_NEWS = 64
#: ``subscriptions/listen`` requests a connection holds open at once (on HTTP each holds a
#: connection of the pool); the tasks followed beyond them are polled.
MAX_SUBSCRIPTIONS = 16


@dataclass(eq=False)
class Subscription:
    """One ``subscriptions/listen`` for one task: acknowledged or not yet, honoured or not."""

    task_id: str
    acknowledged: anyio.Event = field(default_factory=anyio.Event)
    honored: bool = False


class TaskNews:
    """What a server says unasked about its tasks: status notifications (2025-11-25
    ``notifications/tasks/status``, the extension's ``notifications/tasks``) and the acknowledgements
    of the extension's subscriptions, for the tasks a connection follows."""

    def __init__(self) -> None:
        self._arrived: dict[str, anyio.Event] = {}  # by task id, while it is followed
        self._latest: dict[str, dict[str, Any]] = {}
        self._early: OrderedDict[str, dict[str, Any]] = OrderedDict()  # tasks not followed yet
        self._subscriptions: dict[RequestId, Subscription] = {}  # by the listen request's id
        self._listening: set[str] = set()  # tasks whose notifications the server agreed to send
        self._open = 0  # subscriptions/listen requests held open (MAX_SUBSCRIPTIONS at most)

    def deliver(self, params: dict[str, Any] | None) -> bool:
        """Take a notification's params; False when they are about no task being followed (the
        newest about each of :data:`EARLY_NEWS` such tasks is kept until it is)."""
        task_id = params.get("taskId") if params is not None else None
        if params is None or not isinstance(task_id, str):
            return False
        arrived = self._arrived.get(task_id)
        if arrived is None:
            self._early[task_id] = params
            self._early.move_to_end(task_id)
            while len(self._early) > EARLY_NEWS:
                self._early.popitem(last=False)
            return False
        self._latest[task_id] = params
        arrived.set()
        return True

    def acknowledge(self, params: dict[str, Any] | None) -> bool:
        """Take a ``notifications/subscriptions/acknowledged``; False when it is about no subscription
        of this connection's, or one already acknowledged."""
        meta = params.get("_meta") if params is not None else None
        key = meta.get(SUBSCRIPTION_ID_KEY) if isinstance(meta, dict) else None
        if params is None or isinstance(key, bool) or not isinstance(key, str | int):
            return False
        subscription = self._subscriptions.get(key)
        if subscription is None or subscription.acknowledged.is_set():
            return False
        agreed = params.get("notifications")
        task_ids = agreed.get("taskIds") if isinstance(agreed, dict) else None
        subscription.honored = isinstance(task_ids, list) and subscription.task_id in task_ids
        subscription.acknowledged.set()
        if subscription.honored:
            self._listening.add(subscription.task_id)
            self._wake(subscription.task_id)  # poll once: what changed before the subscription began
        return True

    @contextmanager
    def room(self) -> Iterator[bool]:
        """Whether one more subscription may be held open (the block holds it while it runs)."""
        if self._open >= MAX_SUBSCRIPTIONS:
            yield False
            return
        self._open += 1
        try:
            yield True
        finally:
            self._open -= 1

    def subscribe(self, subscription: Subscription, request_id: RequestId) -> None:
        """``subscription`` is the ``subscriptions/listen`` request ``request_id``."""
        self._subscriptions[request_id] = subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        """``subscription`` has ended: its task is polled again (at once, to miss nothing)."""
        for key in [k for k, v in self._subscriptions.items() if v is subscription]:
            del self._subscriptions[key]
        if subscription.honored:
            self._listening.discard(subscription.task_id)
            self._wake(subscription.task_id)

    def listening(self, task_id: str) -> bool:
        """Whether the server agreed to send status notifications about ``task_id`` (and still may)."""
        return task_id in self._listening

    def _wake(self, task_id: str) -> None:
        arrived = self._arrived.get(task_id)
        if arrived is not None:
            arrived.set()

    @contextmanager
    def following(self, task_id: str) -> Iterator[None]:
        """Keep the notifications about ``task_id`` while the block runs (one that came before is
        the first)."""
        self._arrived[task_id] = arrived = anyio.Event()
        early = self._early.pop(task_id, None)
        if early is not None:
            self._latest[task_id] = early
            arrived.set()
        try:
            yield
        finally:
            self._arrived.pop(task_id, None)
            self._latest.pop(task_id, None)

    async def wait(self, task_id: str, seconds: float) -> dict[str, Any] | None:
        """The newest notification about ``task_id`` that arrives within ``seconds``; None after
        ``seconds``, or when its subscription began or ended (time to poll)."""
        arrived = self._arrived[task_id]
        with anyio.move_on_after(seconds):
            await arrived.wait()
        if arrived.is_set():
            self._arrived[task_id] = anyio.Event()
        return self._latest.pop(task_id, None)


def news_of(raw: dict[str, Any], seen: RemoteTask, *, legacy: bool = False) -> RemoteTask | None:
    """The state a status notification tells, when it is news after ``seen``: None when it is
    malformed, about another task, the state already seen, older than it (``lastUpdatedAt``), or
    comes after a terminal state (which never changes). A terminal state is never taken for old."""
    try:
        told = remote_task(raw, legacy=legacy)
    except BadResult as exc:
        logger.debug("ignored a malformed task status notification: %s", exc)
        return None
    if told.task_id != seen.task_id or seen.is_terminal or told == seen:
        return None
    if not told.is_terminal and _before(told.last_updated_at, seen.last_updated_at):
        return None
    return told


def _before(stamp: str | None, other: str | None) -> bool:
    """Whether ISO 8601 time ``stamp`` is strictly before ``other`` (False when either is unreadable)."""
    try:
        return stamp is not None and other is not None and instant(stamp) < instant(other)
    except (ValueError, TypeError):
        return False
