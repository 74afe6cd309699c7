"""Tasks: the lifecycle table, the stored record, stores and list cursors."""

from host_receiver.errors import IllegalTransition as IllegalTransition  # its old path, until 0.4
from host_receiver.errors import InvalidCursor as InvalidCursor  # its old path, until 0.4
from host_receiver.tasks.cursor import CursorCodec
from host_receiver.tasks.record import TaskRecord, iso8601, new_task_id
from host_receiver.tasks.state import ALLOWED_MOVES, TaskStatus
from host_receiver.tasks.store import MemoryTaskStore, TaskStore

__all__ = [
    "ALLOWED_MOVES",
    "CursorCodec",
    "MemoryTaskStore",
    "TaskRecord",
    "TaskStatus",
    "TaskStore",
    "iso8601",
    "new_task_id",
]
