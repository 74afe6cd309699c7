"""Sending without waiting: a session's replies and notifications, in order, never blocking.

Rules:

- :meth:`Outbox.send_soon` hands a message to the stream's ``send_nowait``
  when nothing waits before it; when the stream cannot take it now, it
  queues, in order, behind what waits already, and one sender task writes
  the queue with ``send``. So a receive loop that replies never waits on the
  peer, and two sessions wired to each other cannot deadlock on full buffers.
- A message that cannot be encoded is a bug here: it is logged, and a reply
  is replaced by -32603 "Internal error" (anything else is dropped).
- A broken stream is logged and the message dropped: the session's receive
  loop learns of the end on its own.
- Closing: the sender keeps writing the queue for at most ``grace`` seconds
  from the moment the session closed (so replies already computed still go
  out), then gives up with a warning.
"""

from __future__ import annotations

from collections import deque

import anyio
from anyio.abc import TaskGroup

from host_receiver.errors import INTERNAL_ERROR, RpcError, TransportError
from host_receiver.protocol.jsonrpc import ErrorResponse, Message, Notification, Request, Response
from host_receiver.sanitize import safe_id, safe_logger
from host_receiver.transports.base import MessageStream

__all__ = ["Outbox", "describe"]

logger = safe_logger("host_receiver.session")


class Outbox:
    """The ordered, never-waiting sending of one session (rules above)."""

    def __init__(self, stream: MessageStream, tasks: TaskGroup, *, peer: str, grace: float) -> None:
        self._stream = stream
        self._tasks = tasks
        self._peer = peer
        self._grace = grace
        self._queue: deque[Message] = deque()  # messages the stream could not take yet
        self._closed_at: float | None = None
        self._sender: anyio.CancelScope | None = None

    @property
    def waiting(self) -> int:
        """How many messages wait for the stream."""
        return len(self._queue)

    def send_soon(self, message: Message) -> None:
        """Send now if the stream can take it, else queue behind what waits already."""
        if not self._queue:
            try:
                self._stream.send_nowait(message)
                return
            except anyio.WouldBlock:
                pass
            except (TypeError, ValueError) as exc:
                substitute = self._not_json(message, exc)
                if substitute is not None:
                    self.send_soon(substitute)
                return
            except (TransportError, anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
                logger.warning("could not send %s to %s: %s", describe(message), self._peer, exc)
                return
            self._tasks.start_soon(self._send_queue)
        self._queue.append(message)

    def close(self) -> None:
        """The session closed: what is queued gets ``grace`` seconds from now."""
        self._closed_at = anyio.current_time()
        if self._sender is not None:
            self._sender.deadline = min(self._sender.deadline, self._closed_at + self._grace)

    async def _send_queue(self) -> None:
        queue = self._queue
        with anyio.CancelScope(shield=True) as scope:
            self._sender = scope
            if self._closed_at is not None:
                scope.deadline = self._closed_at + self._grace
            try:
                while queue:
                    message = queue[0]
                    try:
                        await self._stream.send(message)
                    except (TypeError, ValueError) as exc:
                        substitute = self._not_json(message, exc)
                        if substitute is not None:
                            queue[0] = substitute
                            continue
                    except (TransportError, anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
                        logger.warning("could not send %s to %s: %s", describe(message), self._peer, exc)
                    queue.popleft()
            finally:
                self._sender = None
        if scope.cancelled_caught:
            logger.warning("gave up sending %d messages to %s while closing", len(queue), self._peer)
            queue.clear()

    def _not_json(self, message: Message, exc: Exception) -> ErrorResponse | None:
        """What to send instead of a message that cannot be encoded (a bug here, logged)."""
        logger.error("%s to %s is not JSON; not sent", describe(message), self._peer, exc_info=exc)
        if isinstance(message, Response):
            return ErrorResponse(message.id, RpcError(INTERNAL_ERROR, "Internal error"))
        return None


def describe(message: Message) -> str:
    """A message in a few words, for logs."""
    if isinstance(message, Response | ErrorResponse):
        return f"reply {safe_id(message.id)}"
    if isinstance(message, Notification | Request):
        return message.method
    return "message"
