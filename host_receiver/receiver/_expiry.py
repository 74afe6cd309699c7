"""When tasks expire: a heap of deadlines and one sleeper per requestor.

Rules:

- A task with a ttl is deleted ttl after its creation, working or finished;
  one without a ttl lives until its requestor goes away.
- Deadlines sit in a heap; :meth:`Expiry.run` sleeps until the earliest one
  (no scans, no polling) and wakes early when an earlier deadline is added.
- :meth:`Expiry.due` expires everything whose deadline the clock has passed;
  a test that moves its clock calls it directly.
- What expiring a task means (cancel its work, delete it, wake its waiters)
  is the callback's business.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable

import anyio

__all__ = ["Expiry"]


class Expiry:
    """Calls ``expire(task_id)`` at each scheduled deadline of ``clock``."""

    def __init__(self, clock: Callable[[], float], expire: Callable[[str], None]) -> None:
        self._clock = clock
        self._expire = expire
        self._deadlines: list[tuple[float, str]] = []
        self._changed = anyio.Event()

    def schedule(self, deadline: float, task_id: str) -> None:
        """Expire ``task_id`` at ``deadline`` (epoch seconds of ``clock``)."""
        earliest = self._deadlines[0][0] if self._deadlines else math.inf
        heapq.heappush(self._deadlines, (deadline, task_id))
        if deadline < earliest:
            self._changed.set()

    def due(self) -> None:
        """Expire every task whose deadline has passed."""
        now = self._clock()
        while self._deadlines and self._deadlines[0][0] <= now:
            _, task_id = heapq.heappop(self._deadlines)
            self._expire(task_id)

    async def run(self) -> None:
        """Expire tasks on time, for ever (cancel to stop)."""
        while True:
            self.due()
            self._changed = anyio.Event()
            delay = self._deadlines[0][0] - self._clock() if self._deadlines else math.inf
            with anyio.move_on_after(delay):
                await self._changed.wait()
