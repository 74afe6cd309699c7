"""What the models are doing right now, for the live progress line.

Rules:

- :class:`Activity` is the :class:`~host_receiver.handlers.GenerationObserver`
  of the terminal's sampling service: a generation is shown exactly as long as
  one provider call runs (after approval, until it returns, fails or is
  cancelled), with the tokens the provider reported so far.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from host_receiver.handlers import Generation, ModelRouter, SamplingService
from host_receiver.people.approval import SamplingApprover
from host_receiver.receiver.work import SamplingHandler
from host_receiver.sanitize import safe_text


@dataclass(slots=True)
class Activity:
    """The generations running now (with their start times), and the listeners told of each start and end."""

    clock: Callable[[], float] = time.monotonic
    running: dict[Generation, float] = field(default_factory=dict)
    _listeners: list[Callable[[], None]] = field(default_factory=list)

    def subscribe(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` whenever a generation starts or ends."""
        self._listeners.append(listener)

    def _changed(self) -> None:
        for listener in self._listeners:
            listener()

    def generation_started(self, generation: Generation) -> None:
        self.running[generation] = self.clock()
        self._changed()

    def generation_progressed(self, generation: Generation) -> None:
        """Tokens are read when the line is drawn; nothing to do here."""

    def generation_ended(self, generation: Generation) -> None:
        self.running.pop(generation, None)
        self._changed()

    def describe(self) -> str | None:
        """One line about every running generation, or None when nothing runs."""
        if not self.running:
            return None
        now = self.clock()
        parts = [
            f"{safe_text(g.server, 60)} · {task_label(g.task_id)} generating with {safe_text(g.model, 60)}: "
            f"{g.tokens}/{g.max_tokens} tokens, {now - started:.1f} s"
            for g, started in self.running.items()
        ]
        return "⏳ " + " | ".join(parts)


def task_label(task_id: str | None) -> str:
    """A task id short enough for a prompt (its first 8 characters)."""
    if task_id is None:
        return "no task"
    return f"task {task_id[:8]}" + ("…" if len(task_id) > 8 else "")


def terminal_sampling(router: ModelRouter, approver: SamplingApprover, activity: Activity) -> SamplingHandler:
    """A :class:`SamplingService` whose model calls are shown in ``activity``."""
    return SamplingService(router, approver, observer=activity)
