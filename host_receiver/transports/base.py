"""The one interface every transport implements, and what they share.

A :class:`Transport` is a recipe for a connection (a command line, a URL);
``transport.connect()`` is an async context manager that opens the connection
and yields a :class:`MessageStream`, and closes it on exit.

Rules every message stream follows:

- ``send`` takes one JSON-RPC message and may be called from many tasks at
  once; the stream serialises writes itself if its medium needs it. A broken
  connection raises :class:`TransportError` (or a subclass).
- ``send_nowait`` hands a message over without waiting, or raises
  ``anyio.WouldBlock`` when it cannot (the default: streams whose medium is
  always asynchronous, such as HTTP, never take one). A message it took is
  sent in order with the ones before it; a message it refused was not sent.
- ``receive`` returns the next message from the peer. A frame that is not a
  valid message comes back as an :class:`InvalidMessage` *value*, not raised,
  so one bad frame never ends the stream. The peer ending the connection
  raises ``anyio.EndOfStream``; a fatal transport failure raises
  :class:`TransportError`. Only one task receives.
- A stream reads no message longer than its ``max_message_size``
  (:data:`DEFAULT_MAX_MESSAGE_SIZE`, 64 MB, unless configured): a longer one
  is not buffered beyond the limit but judged by its head
  (:func:`~host_receiver.protocol.jsonrpc.oversized`), so a request still
  gets an error reply with its id, and the stream goes on.
- Streams know bytes and JSON-RPC, and of MCP only what their binding
  says (the HTTP binding mirrors a request's method, name and protocol
  version into headers). The hooks :meth:`MessageStream.set_protocol_version`,
  :meth:`MessageStream.open_listener`, :meth:`MessageStream.abandon` and
  :meth:`MessageStream.accept_tools` are how the MCP layer tells a stream
  what it needs to know; they do nothing where nothing needs doing.
  :meth:`MessageStream.silence_means_legacy` is what the MCP layer asks of
  the stream's binding when it probes the server's era.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio

# Re-exported: its old home (host_receiver._concurrency is where it lives now).
from host_receiver._concurrency import background_task_group
from host_receiver.errors import InvalidMessage
from host_receiver.protocol.jsonrpc import Message
from host_receiver.protocol.types import RequestId

__all__ = [
    "DEFAULT_MAX_MESSAGE_SIZE",
    "MessageStream",
    "Transport",
    "background_task_group",
]

#: The longest message a stream reads, in bytes, unless configured otherwise.
DEFAULT_MAX_MESSAGE_SIZE = 64 * 1024 * 1024


class MessageStream(ABC):
    """A bidirectional stream of JSON-RPC messages with one peer."""

    @abstractmethod
    async def send(self, message: Message) -> None:
        """Deliver ``message`` to the peer."""

    def send_nowait(self, message: Message) -> None:
        """Deliver ``message`` without waiting, or raise ``anyio.WouldBlock``."""
        raise anyio.WouldBlock

    @abstractmethod
    async def receive(self) -> Message | InvalidMessage:
        """The next message from the peer (see the module rules)."""

    def set_protocol_version(self, version: str) -> None:
        """The MCP handshake agreed on ``version``; called before ``initialized``."""
        return None

    async def open_listener(self) -> None:
        """Open the channel for messages the peer starts on its own, if there is one.

        Called once, after ``notifications/initialized`` was sent (legacy
        connections only). Returns when the channel is open (or known not to
        exist).
        """
        return None

    def abandon(self, request_id: RequestId) -> bool:
        """Nobody waits for ``request_id`` any more: True if the medium itself tells the peer.

        When it returns False, the session sends ``notifications/cancelled``.
        The 2026-07-28 HTTP binding cancels by closing the request's stream.
        """
        return False

    def accept_tools(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The tools of a ``tools/list`` page this stream can call (all, unless its binding says)."""
        return tools

    def silence_means_legacy(self) -> bool:
        """Whether a server silent on ``server/discover`` may be taken for a legacy one.

        True by default (stdio: legacy servers may leave a request before
        ``initialize`` unanswered); False on HTTP, where a legacy server
        answers with an error status.
        """
        return True


class Transport(ABC):
    """How to reach one peer."""

    @abstractmethod
    def connect(self) -> AbstractAsyncContextManager[MessageStream]:
        """Open a connection; the stream is closed when the context exits."""
