"""The lifecycle table and the record that enforces it."""

from __future__ import annotations

import dataclasses
import itertools
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from host_receiver.errors import IllegalTransition
from host_receiver.receiver.tasks.record import TaskRecord, deadline_of, iso8601, new_task_id
from host_receiver.receiver.tasks.state import TaskStatus

S = TaskStatus
ALLOWED = {
    (S.WORKING, S.INPUT_REQUIRED),
    (S.WORKING, S.COMPLETED),
    (S.WORKING, S.FAILED),
    (S.WORKING, S.CANCELLED),
    (S.INPUT_REQUIRED, S.WORKING),
    (S.INPUT_REQUIRED, S.COMPLETED),
    (S.INPUT_REQUIRED, S.FAILED),
    (S.INPUT_REQUIRED, S.CANCELLED),
}


def record(status: TaskStatus) -> TaskRecord:
    return TaskRecord(
        task_id="t", requestor="r", seq=1, method="m", created_at=0.0, ttl_ms=None,
        poll_interval_ms=None, status=status,
    )  # fmt: skip


@pytest.mark.parametrize(("current", "target"), list(itertools.product(S, S)))
def test_every_move_follows_the_spec_table(current: TaskStatus, target: TaskStatus) -> None:
    """T-LIFE-2/3: exactly the spec's moves are possible; terminal statuses are final."""
    if (current, target) in ALLOWED:
        assert record(current).moved_to(target, 5.0).status is target
    else:
        with pytest.raises(IllegalTransition):
            record(current).moved_to(target, 5.0)


def test_new_tasks_start_working() -> None:
    assert record(TaskStatus.WORKING).status is S.WORKING
    assert TaskRecord("t", "r", 1, "m", 0.0, None, None).status is S.WORKING


def test_terminal_statuses() -> None:
    assert {s for s in S if s.is_terminal} == {S.COMPLETED, S.FAILED, S.CANCELLED}


def test_wire_task_always_has_ttl_and_iso_timestamps() -> None:
    wire = TaskRecord("t", "r", 1, "m", 1764066600.5, None, 500).to_wire()
    assert wire == {
        "taskId": "t",
        "status": "working",
        "createdAt": "2025-11-25T10:30:00.500Z",
        "lastUpdatedAt": "2025-11-25T10:30:00.500Z",
        "ttl": None,
        "pollInterval": 500,
    }
    assert iso8601(0) == "1970-01-01T00:00:00.000Z"


def test_task_ids_carry_their_deadline() -> None:
    assert deadline_of(new_task_id(1_900_000_000.25)) == 1_900_000_000.25
    assert deadline_of(new_task_id(None)) is None
    assert deadline_of("not-an-id") is None
    assert deadline_of("é") is None


@given(st.floats(min_value=0, max_value=4e9, allow_nan=False))
def test_iso8601_matches_the_standard_library(timestamp: float) -> None:
    moment = datetime.fromtimestamp(timestamp, UTC)
    expected = moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    assert iso8601(timestamp) == expected


def test_changes_keep_every_field_they_do_not_change() -> None:
    record = TaskRecord(
        "id", "requestor", 7, "sampling/createMessage", 100.0, 5000, 250,
        status=TaskStatus.WORKING, status_message="busy", last_updated_at=101.0,
    )  # fmt: skip
    messaged = record.with_message("still busy", 102.0)
    done = messaged.moved_to(TaskStatus.COMPLETED, 103.0, message="done", result={"x": 1})
    changed = {"status", "status_message", "last_updated_at", "result", "error"}
    for field in dataclasses.fields(TaskRecord):
        if field.name not in changed and field.init:
            assert getattr(done, field.name) == getattr(record, field.name), field.name
    assert (messaged.status, messaged.status_message, messaged.last_updated_at) == (
        TaskStatus.WORKING,
        "still busy",
        102.0,
    )
    assert (done.status, done.status_message, done.result, done.error) == (
        TaskStatus.COMPLETED,
        "done",
        {"x": 1},
        None,
    )
    assert done.to_wire()["lastUpdatedAt"] == iso8601(103.0)
