"""The task lifecycle: statuses and the moves allowed between them.

Everything that decides whether a task may change status lives in this file,
as one table. A task starts ``working``; from ``working`` it may move to
``input_required`` or to a terminal status; from ``input_required`` back to
``working`` or to a terminal status. ``completed``, ``failed`` and
``cancelled`` are terminal: nothing leaves them.
"""

from __future__ import annotations

from enum import StrEnum

from host_receiver.errors import IllegalTransition


class TaskStatus(StrEnum):
    """The five statuses of the 2025-11-25 tasks chapter, with their wire names."""

    WORKING = "working"
    INPUT_REQUIRED = "input_required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def is_terminal(self) -> bool:
        """True for completed, failed and cancelled."""
        return not ALLOWED_MOVES[self]


TERMINAL = frozenset({TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED})

#: status -> the statuses it may move to.
ALLOWED_MOVES: dict[TaskStatus, frozenset[TaskStatus]] = {
    TaskStatus.WORKING: frozenset({TaskStatus.INPUT_REQUIRED}) | TERMINAL,
    TaskStatus.INPUT_REQUIRED: frozenset({TaskStatus.WORKING}) | TERMINAL,
    TaskStatus.COMPLETED: frozenset(),
    TaskStatus.FAILED: frozenset(),
    TaskStatus.CANCELLED: frozenset(),
}

INITIAL = TaskStatus.WORKING


def check_move(current: TaskStatus, target: TaskStatus) -> None:
    """Raise :class:`IllegalTransition` unless ``current -> target`` is allowed."""
    if target not in ALLOWED_MOVES[current]:
        raise IllegalTransition(current, target)
