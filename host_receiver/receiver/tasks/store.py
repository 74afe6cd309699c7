"""Where task records live: a small interface and an in-memory store.

Rules of this layer:
- A store keeps :class:`TaskRecord` values, nothing else: no events, no
  timers, no background work. Waiting for a task and expiring it on time are
  the receiver's business; a store only answers questions about its data.
- Records are looked up by task id alone; ownership checks happen above.
- ``page`` walks one requestor's tasks in creation order (``seq``) from a
  position, so a page boundary stays valid while tasks are added or deleted.
- Every method is synchronous and quick: a dictionary or an indexed lookup.
  The receiver answers ``tasks/get``, ``tasks/list``, ``tasks/cancel`` and
  task creation without yielding to the event loop, which is most of their
  speed; a store backed by a local database (SQLite in WAL mode) answers in
  microseconds too. A store that needs the network does not belong here.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Protocol

from host_receiver.receiver.tasks.record import TaskRecord


class TaskStore(Protocol):
    """The storage interface the receiver relies on."""

    def insert(self, record: TaskRecord) -> None:
        """Add a new record (its task id is not in the store)."""

    def get(self, task_id: str) -> TaskRecord | None:
        """The record with ``task_id``, or None."""

    def replace(self, record: TaskRecord) -> None:
        """Store a new version of an existing record."""

    def delete(self, task_id: str) -> TaskRecord | None:
        """Remove a record; return it, or None when it was not there."""

    def page(self, requestor: str, after_seq: int, limit: int) -> tuple[list[TaskRecord], bool]:
        """Up to ``limit`` of ``requestor``'s records with ``seq > after_seq``, oldest first,
        and whether more follow."""

    def counts(self, requestor: str) -> tuple[int, int]:
        """How many of ``requestor``'s tasks are stored, and how many of them are not terminal."""

    def ids_of(self, requestor: str) -> list[str]:
        """Every task id of ``requestor``."""

    def deadlines(self) -> list[tuple[float, str]]:
        """``(deadline, task_id)`` of every record that has a ttl (for a scheduler's start)."""


@dataclass(slots=True)
class _RequestorIndex:
    seqs: list[int] = field(default_factory=list)  # sorted: creation order
    ids: dict[int, str] = field(default_factory=dict)  # seq -> task id
    active: int = 0  # records not in a terminal status


class MemoryTaskStore:
    """A :class:`TaskStore` in process memory; lookups O(1), pages O(log n + page)."""

    def __init__(self) -> None:
        self._records: dict[str, TaskRecord] = {}
        self._index: dict[str, _RequestorIndex] = {}

    def __len__(self) -> int:
        return len(self._records)

    def insert(self, record: TaskRecord) -> None:
        if record.task_id in self._records:
            raise KeyError(f"task {record.task_id} already stored")
        self._records[record.task_id] = record
        index = self._index.get(record.requestor)
        if index is None:
            index = self._index[record.requestor] = _RequestorIndex()
        if index.seqs and record.seq <= index.seqs[-1]:
            bisect.insort(index.seqs, record.seq)
        else:
            index.seqs.append(record.seq)
        index.ids[record.seq] = record.task_id
        if not record.is_terminal:
            index.active += 1

    def get(self, task_id: str) -> TaskRecord | None:
        return self._records.get(task_id)

    def replace(self, record: TaskRecord) -> None:
        old = self._records.get(record.task_id)
        if old is None:
            raise KeyError(f"task {record.task_id} is not stored")
        self._records[record.task_id] = record
        if old.is_terminal != record.is_terminal:
            self._index[record.requestor].active += -1 if record.is_terminal else 1

    def delete(self, task_id: str) -> TaskRecord | None:
        record = self._records.pop(task_id, None)
        if record is None:
            return None
        index = self._index[record.requestor]
        position = bisect.bisect_left(index.seqs, record.seq)
        del index.seqs[position]
        del index.ids[record.seq]
        if not record.is_terminal:
            index.active -= 1
        if not index.seqs:
            del self._index[record.requestor]
        return record

    def page(self, requestor: str, after_seq: int, limit: int) -> tuple[list[TaskRecord], bool]:
        index = self._index.get(requestor)
        if index is None:
            return [], False
        start = bisect.bisect_right(index.seqs, after_seq)
        chosen = index.seqs[start : start + limit]
        more = start + limit < len(index.seqs)
        return [self._records[index.ids[seq]] for seq in chosen], more

    def counts(self, requestor: str) -> tuple[int, int]:
        index = self._index.get(requestor)
        return (0, 0) if index is None else (len(index.seqs), index.active)

    def ids_of(self, requestor: str) -> list[str]:
        index = self._index.get(requestor)
        return [] if index is None else [index.ids[seq] for seq in index.seqs]

    def deadlines(self) -> list[tuple[float, str]]:
        return [(r.deadline, r.task_id) for r in self._records.values() if r.deadline is not None]
