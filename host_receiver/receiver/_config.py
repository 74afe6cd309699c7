"""The receiver's limits and defaults, in one frozen object."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ELICITATION", "ROOTS", "SAMPLING", "ReceiverConfig"]

SAMPLING = "sampling/createMessage"
ELICITATION = "elicitation/create"
ROOTS = "roots/list"


@dataclass(frozen=True, slots=True)
class ReceiverConfig:
    """Limits and defaults of the task receiver (all durations in milliseconds)."""

    #: ttl given to a task whose request did not ask for one (None: unlimited).
    default_ttl_ms: int | None = 3_600_000
    #: Longest ttl granted; longer requests are shortened to it (None: no cap).
    max_ttl_ms: int | None = 86_400_000
    #: Suggested polling interval reported in every task (None: not reported).
    poll_interval_ms: int | None = 1_000
    #: Tasks of one requestor that may be working or input_required at once.
    max_active_tasks: int = 256
    #: Tasks of one requestor kept at once, finished ones included.
    max_stored_tasks: int = 10_000
    #: Tasks in one ``tasks/list`` page.
    page_size: int = 100
    #: Request types that accept task augmentation (a subset of what is handled).
    task_methods: frozenset[str] = frozenset({SAMPLING, ELICITATION})
    #: Whether ``tasks/list`` and ``tasks/cancel`` are offered.
    tasks_list: bool = True
    tasks_cancel: bool = True
