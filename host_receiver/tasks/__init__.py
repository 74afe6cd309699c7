"""Tasks: the lifecycle table, the stored record, stores and list cursors."""

from host_receiver.tasks.cursor import CursorCodec, InvalidCursor
from host_receiver.tasks.record import TaskRecord, iso8601, new_task_id
from host_receiver.tasks.state import ALLOWED_MOVES, IllegalTransition, TaskStatus
from host_receiver.tasks.store import MemoryTaskStore, TaskStore

__all__ = [
    "ALLOWED_MOVES",
    "CursorCodec",
    "IllegalTransition",
    "InvalidCursor",
    "MemoryTaskStore",
    "TaskRecord",
    "TaskStatus",
    "TaskStore",
    "iso8601",
    "new_task_id",
]
