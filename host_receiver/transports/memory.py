"""A connected pair of in-memory message streams, for tests and embedding.

Rules:

- Messages cross as JSON text, encoded on send and decoded on receive, exactly
  as on a pipe: the two ends never share a dict, and a malformed frame is
  reported the same way stdio reports one. :meth:`MemoryStream.send_raw` puts
  any text on the wire, so tests can play a misbehaving peer.
- Each direction has a bounded buffer; ``send`` waits while it is full and
  ``send_nowait`` raises ``anyio.WouldBlock``.
- Closing one end ends the other end's ``receive`` with ``anyio.EndOfStream``;
  sending on a closed end raises :class:`TransportError`.
- Each end has a :class:`~host_receiver.transports.base.Binding` that only
  records what the MCP layer told it (:attr:`MemoryStream.protocol_version`,
  :attr:`MemoryStream.listener_opened`), for tests to check; it cancels
  nothing and mirrors no headers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from host_receiver.errors import InvalidMessage, TransportError
from host_receiver.protocol.jsonrpc import Message, decode_message, dumps_message
from host_receiver.transports.base import Binding, MessageStream, StreamAttribute, Transport

__all__ = ["MemoryStream", "MemoryTransport", "create_memory_pair"]

DEFAULT_BUFFER = 32


class MemoryStream(MessageStream):
    """One end of an in-memory pair; see :func:`create_memory_pair`."""

    def __init__(
        self, outgoing: MemoryObjectSendStream[str], incoming: MemoryObjectReceiveStream[str]
    ) -> None:
        self._outgoing = outgoing
        self._incoming = incoming
        #: The versions and listener calls the MCP layer made, for tests to check.
        self.protocol_version: str | None = None
        self.listener_opened = False
        self._binding = _RecordingBinding(self)

    async def send(self, message: Message) -> None:
        await self.send_raw(dumps_message(message).decode())

    def send_nowait(self, message: Message) -> None:
        try:
            self._outgoing.send_nowait(dumps_message(message).decode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise TransportError("the in-memory stream is closed") from None

    async def send_raw(self, frame: str) -> None:
        """Put ``frame`` on the wire as it is, valid JSON-RPC or not."""
        try:
            await self._outgoing.send(frame)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise TransportError("the in-memory stream is closed") from None

    async def receive(self) -> Message | InvalidMessage:
        try:
            frame = await self._incoming.receive()
        except anyio.ClosedResourceError:
            raise anyio.EndOfStream from None
        try:
            return decode_message(frame)
        except InvalidMessage as invalid:
            return invalid

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return {StreamAttribute.binding: lambda: self._binding}

    async def aclose(self) -> None:
        """Close this end; the peer's ``receive`` then ends."""
        self._outgoing.close()
        self._incoming.close()


class _RecordingBinding(Binding):
    """Records on its stream what the MCP layer told the binding."""

    def __init__(self, stream: MemoryStream) -> None:
        self._stream = stream

    def agree(self, version: str) -> None:
        self._stream.protocol_version = version

    async def open_listener(self) -> None:
        self._stream.listener_opened = True


def create_memory_pair(
    max_buffer_size: int = DEFAULT_BUFFER,
) -> tuple[MemoryStream, MemoryStream]:
    """Two connected streams: what one sends, the other receives."""
    a_to_b_send, a_to_b_receive = anyio.create_memory_object_stream[str](max_buffer_size)
    b_to_a_send, b_to_a_receive = anyio.create_memory_object_stream[str](max_buffer_size)
    return MemoryStream(a_to_b_send, b_to_a_receive), MemoryStream(b_to_a_send, a_to_b_receive)


class MemoryTransport(Transport):
    """A transport whose connection is one end of an in-memory pair.

    ``connect()`` yields the client end; :attr:`peer` is the other end, for the
    test (or in-process server) that plays the peer. One connection per transport.
    """

    def __init__(self, max_buffer_size: int = DEFAULT_BUFFER) -> None:
        self._client, self.peer = create_memory_pair(max_buffer_size)

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[MemoryStream]:
        try:
            yield self._client
        finally:
            await self._client.aclose()
