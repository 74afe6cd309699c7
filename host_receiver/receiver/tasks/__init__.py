"""The tasks the host runs for a server: the lifecycle table, the stored record, stores and list cursors.

(Was ``host_receiver.tasks`` until 0.3; that path still imports, with a
DeprecationWarning, until 0.4.) May import protocol and the base only.
"""

from host_receiver.errors import IllegalTransition as IllegalTransition  # its old path, until 0.4
from host_receiver.errors import InvalidCursor as InvalidCursor  # its old path, until 0.4
from host_receiver.receiver.tasks.cursor import CursorCodec
from host_receiver.receiver.tasks.record import TaskRecord, iso8601, new_task_id
from host_receiver.receiver.tasks.state import ALLOWED_MOVES, TaskStatus
from host_receiver.receiver.tasks.store import MemoryTaskStore, TaskStore

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
