"""What is kept about one task: an immutable record, plain data.

A record is replaced, never mutated, on every change; the only way to change
its status is :meth:`TaskRecord.moved_to`, which enforces the lifecycle table
in :mod:`host_receiver.receiver.tasks.state`. Records hold the final outcome as JSON
data (a result object or a JSON-RPC error object), so any store can persist
them as they are.
"""

from __future__ import annotations

import base64
import binascii
import functools
import math
import os
import struct
import time
from dataclasses import dataclass, field
from typing import Any

from host_receiver.errors import RpcError
from host_receiver.receiver.tasks.state import INITIAL, TaskStatus, check_move

_ID_RANDOM_BYTES = 16  # 128 bits from the OS CSPRNG
_ID_DEADLINE = struct.Struct(">Q")
_ID_LENGTH = 32  # base64 of the 24 bytes
_URL_SAFE = bytes.maketrans(b"+/", b"-_")


def new_task_id(deadline: float | None) -> str:
    """A fresh task id: 128 random bits, then the expiry deadline (ms, 0 = none).

    Carrying the deadline lets the receiver tell an expired id from one it
    never issued without keeping anything after the task is gone.
    """
    deadline_ms = 0 if deadline is None else int(deadline * 1000)
    raw = os.urandom(_ID_RANDOM_BYTES) + _ID_DEADLINE.pack(deadline_ms)
    # 24 bytes make 32 base64 characters and no padding; binascii skips the
    # wrappers of base64.urlsafe_b64encode, which cost half of an id.
    return binascii.b2a_base64(raw, newline=False).translate(_URL_SAFE).decode("ascii")


def deadline_of(task_id: str) -> float | None:
    """The expiry deadline (epoch seconds) an id issued by :func:`new_task_id` carries."""
    if len(task_id) != _ID_LENGTH:  # not one of ours; and a huge id is not decoded
        return None
    try:
        raw = base64.urlsafe_b64decode(task_id + "=" * (-len(task_id) % 4))
    except (ValueError, UnicodeEncodeError):
        return None
    if len(raw) != _ID_RANDOM_BYTES + _ID_DEADLINE.size:
        return None
    (deadline_ms,) = _ID_DEADLINE.unpack_from(raw, _ID_RANDOM_BYTES)
    return deadline_ms / 1000 if deadline_ms else None


def iso8601(timestamp: float) -> str:
    """``timestamp`` (epoch seconds) as an ISO 8601 UTC string with milliseconds.

    Formatted by hand, and the date and time of day are formatted once per
    second: every new task and every status change needs one of these.
    """
    seconds = math.floor(timestamp)
    micros = round((timestamp - seconds) * 1_000_000)  # as datetime rounds
    if micros == 1_000_000:
        seconds, micros = seconds + 1, 0
    return f"{_date_and_time(seconds)}.{micros // 1000:03d}Z"


@functools.lru_cache(maxsize=8)
def _date_and_time(seconds: int) -> str:
    """``YYYY-MM-DDTHH:MM:SS`` of whole epoch ``seconds`` (a pure function, memoised)."""
    t = time.gmtime(seconds)
    return f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}"


@dataclass(frozen=True, slots=True)
class TaskRecord:
    """One task as stored: identity, owner, lifecycle state and outcome."""

    task_id: str
    requestor: str
    seq: int
    method: str
    created_at: float
    ttl_ms: int | None
    poll_interval_ms: int | None
    status: TaskStatus = INITIAL
    status_message: str | None = None
    last_updated_at: float = 0.0
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    #: The ``Task`` object, made on the first :meth:`to_wire` (records never change).
    _wire: dict[str, Any] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def deadline(self) -> float | None:
        """When the task and its result may be deleted (epoch seconds), or None."""
        return None if self.ttl_ms is None else self.created_at + self.ttl_ms / 1000

    @property
    def is_terminal(self) -> bool:
        return self.status.is_terminal

    def moved_to(
        self,
        status: TaskStatus,
        now: float,
        *,
        message: str | None = None,
        result: dict[str, Any] | None = None,
        error: RpcError | None = None,
    ) -> TaskRecord:
        """A copy in ``status``; raises IllegalTransition for a forbidden move."""
        check_move(self.status, status)
        return self._changed(status, message, now, result, None if error is None else error.to_dict())

    def with_message(self, message: str | None, now: float) -> TaskRecord:
        """A copy with a new ``statusMessage`` and the same status."""
        return self._changed(self.status, message, now, self.result, self.error)

    def _changed(
        self,
        status: TaskStatus,
        message: str | None,
        now: float,
        result: dict[str, Any] | None,
        error: dict[str, Any] | None,
    ) -> TaskRecord:
        # Spelled out: dataclasses.replace costs three times as much, on every status message.
        return TaskRecord(
            self.task_id,
            self.requestor,
            self.seq,
            self.method,
            self.created_at,
            self.ttl_ms,
            self.poll_interval_ms,
            status,
            message,
            now,
            result,
            error,
        )

    def to_wire(self) -> dict[str, Any]:
        """The ``Task`` object of the protocol (``ttl`` always present, null = unlimited).

        Made once per record and copied on every call: a ``tasks/list`` page of
        records that did not change costs no timestamp formatting.
        """
        if self._wire is None:
            object.__setattr__(self, "_wire", self._make_wire())
        assert self._wire is not None
        return dict(self._wire)

    def _make_wire(self) -> dict[str, Any]:
        created, updated = iso8601(self.created_at), self.last_updated_at or self.created_at
        task: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status.value,
            "createdAt": created,
            "lastUpdatedAt": created if updated == self.created_at else iso8601(updated),
            "ttl": self.ttl_ms,
        }
        if self.status_message is not None:
            task["statusMessage"] = self.status_message
        if self.poll_interval_ms is not None:
            task["pollInterval"] = self.poll_interval_ms
        return task
