"""What the models and the server are doing right now, for the live progress line.

Rules:

- :class:`Activity` is the :class:`~host_receiver.handlers.GenerationObserver`
  of the terminal's sampling service: a generation is shown exactly as long as
  one provider call runs (after approval, until it returns, fails or is
  cancelled), with the tokens the provider reported so far.
- It is also the :class:`~host_receiver.cli._progress.ProgressBoard` of the
  commands' requests: the bar of a call, read or prompt the server reports
  progress on is shown until the request ends.
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
    #: The bar of each request the server reports progress on, by its key.
    progress: dict[object, str] = field(default_factory=dict)
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

    def show_progress(self, key: object, text: str) -> None:
        """Show ``text`` (a request's bar, already safe) until :meth:`end_progress`."""
        self.progress[key] = text
        self._changed()

    def end_progress(self, key: object) -> None:
        self.progress.pop(key, None)
        self._changed()

    def describe(self) -> str | None:
        """One line about every running generation and request in progress, or None when nothing runs."""
        if not self.running and not self.progress:
            return None
        now = self.clock()
        parts = [
            f"{safe_text(g.server, 60)} · {task_label(g.task_id)} generating with {safe_text(g.model, 60)}: "
            f"{g.tokens}/{g.max_tokens} tokens, {now - started:.1f} s"
            for g, started in self.running.items()
        ]
        parts.extend(self.progress.values())
        return "⏳ " + " | ".join(parts)


def task_label(task_id: str | None) -> str:
    """A task id short enough for a prompt (its first 8 characters)."""
    if task_id is None:
        return "no task"
    return f"task {task_id[:8]}" + ("…" if len(task_id) > 8 else "")


def terminal_sampling(router: ModelRouter, approver: SamplingApprover, activity: Activity) -> SamplingHandler:
    """A :class:`SamplingService` whose model calls are shown in ``activity``."""
    return SamplingService(router, approver, observer=activity)
