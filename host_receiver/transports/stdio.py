"""The stdio transport: the server is a child process speaking JSON lines.

Rules:

- One message per line on the child's stdin and stdout, UTF-8. Our encoder
  never emits a raw newline inside a message. Blank lines from the server are
  skipped; a trailing ``\\r`` is tolerated.
- A line that is not a valid message is handed to the session as an
  :class:`InvalidMessage` value. A line longer than ``max_message_size`` is
  dropped without being buffered (only its first few KiB are kept), reported
  once, and judged by that head (:func:`~host_receiver.protocol.jsonrpc.unreadable`):
  a request gets an error reply with its id, and the stream goes on. A
  server's garbage never ends the stream.
- The server closing its stdout, usually by exiting, ends the stream cleanly:
  ``receive`` raises ``anyio.EndOfStream``.
- We own the write end of the child's stdin pipe, non-blocking. A message is
  written whole into the pipe at once when nothing waits before it (no task
  switch between a reply and the pipe); what the pipe does not take is kept,
  in order, and written by one writer task as the pipe drains. A sender that
  is cancelled therefore never leaves half a line behind. ``send`` waits, and
  ``send_nowait`` raises ``anyio.WouldBlock``, only while more than
  ``_HIGH_WATER`` bytes wait. While the session still has received lines to
  handle, writes are held and then made together (one system call per read).
  Notifications sent without waiting are always held for the writer task, so
  the task status notifications of one turn of the event loop share a write.
- The child process itself (its environment, its stderr, its shutdown) is
  :mod:`host_receiver.transports._process`, whose rules hold here: by
  default the child sees only :func:`safe_environment` plus ``env``; on
  leaving, queued writes are finished, stdin closed, and the child and any
  helper it left behind are stopped, shielded from cancellation.

Fixed caps (docs/limits.md): ``_CHUNK``, ``_HIGH_WATER``, ``STDERR_TAIL_LINES``.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream

from host_receiver._concurrency import background_task_group
from host_receiver.errors import InvalidMessage, TransportError
from host_receiver.protocol._head import HEAD_LIMIT
from host_receiver.protocol.jsonrpc import Message, Notification, decode_message, dumps_message, oversized
from host_receiver.sanitize import safe_logger
from host_receiver.transports._process import (
    POSIX,
    forward_stderr,
    safe_environment,
    start_process,
    stop_process,
)
from host_receiver.transports.base import DEFAULT_MAX_MESSAGE_SIZE, MessageStream, StreamAttribute, Transport

__all__ = ["DEFAULT_MAX_MESSAGE_SIZE", "STDERR_TAIL_LINES", "StdioTransport", "safe_environment"]

logger = safe_logger(__name__)

_CHUNK = 64 * 1024
#: The server's last stderr lines kept for an error to quote (``stderr_tail``).
STDERR_TAIL_LINES = 20
_HIGH_WATER = 1024 * 1024


class StdioTransport(Transport):
    """Start ``command args...`` and talk to it over its stdin and stdout."""

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        inherit_env: bool = False,
        cwd: str | os.PathLike[str] | None = None,
        name: str | None = None,
        terminate_grace: float = 2.0,
        stderr_level: int = logging.INFO,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    ) -> None:
        self.command = command
        self.args = list(args)
        self.env = dict(env or {})
        self.inherit_env = inherit_env
        self.cwd = cwd
        self.name = name or Path(command).name
        self.terminate_grace = terminate_grace
        self.stderr_level = stderr_level
        self.max_message_size = max(max_message_size, _CHUNK)
        #: The last lines the server wrote on stderr (made safe), for an error message.
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)

    def _stderr_level(self) -> int:
        return self.stderr_level

    def __repr__(self) -> str:
        return f"StdioTransport({self.command!r}, {self.args!r})"

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[MessageStream]:
        environment = dict(os.environ) if self.inherit_env else safe_environment()
        environment.update(self.env)
        process, stdin = await start_process([self.command, *self.args], environment, self.cwd, self.name)
        assert process.stdout and process.stderr
        writer = _PipeWriter(self.name, stdin)
        stream = _StdioStream(self.name, process.stdout, writer, self.max_message_size)
        writer_done, stderr_done = anyio.Event(), anyio.Event()
        async with process, background_task_group() as tasks:
            tasks.start_soon(writer.run, writer_done)
            self.stderr_tail.clear()
            tasks.start_soon(
                forward_stderr,
                process.stderr,
                lambda: self.name,
                lambda: self.stderr_level,
                stderr_done,
                self.stderr_tail,
            )
            try:
                yield stream
            finally:
                with anyio.CancelScope(shield=True):
                    writer.close()
                    with anyio.move_on_after(self.terminate_grace):
                        await writer_done.wait()  # queued messages written, stdin closed
                    await stop_process(process, self.name, self.terminate_grace, stderr_done)


class _PipeWriter:
    """Owns the write end of the child's stdin (a pipe we made, non-blocking on POSIX).

    ``write_nowait`` writes at once when nothing is pending (and ``hold`` is
    false), and keeps what the pipe did not take; :meth:`run` writes what is
    kept as the pipe drains, then closes it once :meth:`close` was called.
    On Windows, where pipes cannot wait for writability, everything is kept
    and :meth:`run` writes it from a worker thread.
    """

    def __init__(self, name: str, fd: int) -> None:
        self._name = name
        self._fd = fd
        self._pending = bytearray()
        self._more = anyio.Event()  # set when there is something for run() to do
        self._drained = anyio.Event()  # set when the pending bytes fell under the high water mark
        self._drained.set()
        self._closing = False
        self._broken: str | None = None
        if POSIX:
            os.set_blocking(fd, False)

    def write_nowait(self, data: bytes, *, hold: bool = False) -> None:
        """Write ``data`` (now, or after what is pending); raise WouldBlock if too much waits."""
        if self._broken is not None or self._closing:
            raise TransportError(f"{self._name} is no longer reading its input ({self._broken or 'closed'})")
        pending = self._pending
        if len(pending) > _HIGH_WATER:
            raise anyio.WouldBlock
        if pending or hold or not POSIX:
            pending += data
            self._wake()
            return
        written = self._write(data)
        if written < len(data):
            pending += memoryview(data)[written:]
            self._wake()

    async def write(self, data: bytes, *, hold: bool = False) -> None:
        """Write ``data``, first waiting while too much is pending."""
        while len(self._pending) > _HIGH_WATER and self._broken is None:
            if self._drained.is_set():  # every waiter waits on the same event
                self._drained = anyio.Event()
            await self._drained.wait()
        self.write_nowait(data, hold=hold)

    def flush(self) -> None:
        """Write what is pending now, as far as the pipe takes it."""
        pending = self._pending
        if pending and POSIX and self._broken is None:
            del pending[: self._write(pending)]
            if len(pending) <= _HIGH_WATER:
                self._drained.set()

    def close(self) -> None:
        """Close the pipe once everything pending is written."""
        self._closing = True
        self._wake()

    def _wake(self) -> None:
        self._more.set()

    def _write(self, data: bytes | bytearray) -> int:
        """Write what the pipe takes now; 0 when it is full."""
        try:
            return os.write(self._fd, data)
        except BlockingIOError:
            return 0
        except OSError as exc:
            self._broken = str(exc)
            logger.debug("cannot write to %s any more: %s", self._name, exc)
            self._pending.clear()
            return len(data)

    async def run(self, done: anyio.Event) -> None:
        """Write pending bytes as the pipe drains; close the pipe when closing."""
        pending = self._pending
        try:
            while True:
                await self._more.wait()
                self._more = anyio.Event()
                while pending and self._broken is None:
                    if POSIX:
                        self.flush()
                        if pending:
                            await anyio.wait_writable(self._fd)
                    else:  # pragma: no cover - Windows
                        chunk = bytes(pending)
                        pending.clear()
                        await anyio.to_thread.run_sync(self._write, chunk)
                self._drained.set()
                if self._closing or self._broken is not None:
                    return
        finally:
            os.close(self._fd)
            done.set()


class _StdioStream(MessageStream):
    """Messages over a child's stdout (read here) and a write queue to its stdin."""

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return {StreamAttribute.network_transport: lambda: "pipe"}

    def __init__(
        self,
        name: str,
        stdout: ByteReceiveStream,
        writer: _PipeWriter,
        max_message_size: int,
    ) -> None:
        self._name = name
        self._stdout = stdout
        self._writer = writer
        self._max = max_message_size
        self._lines: deque[bytes | InvalidMessage] = deque()
        self._partial: list[bytes] = []
        self._partial_size = 0
        self._oversized: bytes | None = None  # the head of a line too long to keep
        self._eof = False

    async def send(self, message: Message) -> None:
        await self._writer.write(dumps_message(message) + b"\n", hold=bool(self._lines))

    async def aclose(self) -> None:
        """Stop writing: what is queued is still written, then the child's stdin is closed."""
        self._writer.close()

    def send_nowait(self, message: Message) -> None:
        # Lines still to be received: the session is answering a burst, and
        # its answers go out together once it has handled them all. Notifications
        # (task status, progress) wait for the writer task, so that all of them
        # sent in one turn of the event loop share one write.
        hold = bool(self._lines) or type(message) is Notification
        self._writer.write_nowait(dumps_message(message) + b"\n", hold=hold)

    async def receive(self) -> Message | InvalidMessage:
        lines = self._lines
        while True:
            while lines:
                line = lines.popleft()
                if isinstance(line, InvalidMessage):
                    return line
                if not line or line.isspace():
                    continue
                try:
                    return decode_message(line)
                except InvalidMessage as invalid:
                    return invalid
            if self._eof:
                raise anyio.EndOfStream
            self._writer.flush()
            try:
                chunk = await self._stdout.receive(_CHUNK)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._eof = True
                if self._partial:
                    self._end_line(b"")
                continue
            self._split(chunk)

    def _split(self, chunk: bytes) -> None:
        """Cut ``chunk`` into lines; keep the unterminated tail for later."""
        first, newline, rest = chunk.partition(b"\n")
        if not newline:
            self._grow(chunk)
            return
        self._end_line(first)
        *middle, tail = rest.split(b"\n")
        self._lines.extend(middle)
        if tail:
            self._grow(tail)

    def _grow(self, piece: bytes) -> None:
        if self._oversized is not None:
            return
        self._partial.append(piece)
        self._partial_size += len(piece)
        if self._partial_size > self._max:
            self._drop_partial()

    def _drop_partial(self) -> None:
        """Keep only the head of the line being read: it is too long to be a message."""
        head = bytearray()
        for piece in self._partial:
            head += piece[: HEAD_LIMIT - len(head)]
            if len(head) >= HEAD_LIMIT:
                break
        self._oversized = bytes(head)
        self._partial.clear()

    def _end_line(self, last: bytes) -> None:
        if self._oversized is None and self._partial_size + len(last) > self._max:
            self._partial.append(last)
            self._drop_partial()
        if self._oversized is not None:
            logger.warning("%s sent a message over %d bytes; dropped", self._name, self._max)
            self._lines.append(oversized(self._oversized, self._max))
        elif self._partial:
            self._partial.append(last)
            self._lines.append(b"".join(self._partial))
        else:
            self._lines.append(last)
        self._partial.clear()
        self._partial_size = 0
        self._oversized = None
