"""Structured-concurrency helpers that every layer may use (anyio only, nothing of MCP).

The bottom of ``host_receiver``, beside ``errors.py``: transports, the
session and the receiver all start helper tasks the same way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from anyio.abc import TaskGroup

__all__ = ["background_task_group"]


@asynccontextmanager
async def background_task_group() -> AsyncIterator[TaskGroup]:
    """A task group for helper tasks that is cancelled when the block ends.

    Unlike ``async with create_task_group()``, an exception raised by the
    block itself propagates unchanged instead of inside an ExceptionGroup:
    the helpers here are plumbing, and the caller's errors are the caller's.
    A helper that crashes still cancels the block and surfaces as a group.
    """
    raised: BaseException | None = None
    async with anyio.create_task_group() as group:
        try:
            yield group
        except BaseException as exc:  # held back from the group, which would wrap it
            raised = exc
        finally:
            group.cancel_scope.cancel()
    if raised is not None:
        raise raised
