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
- ``aclose`` closes the stream before its context ends: sends fail from
  then on, and ``receive`` comes to ``anyio.EndOfStream`` (stdio: once the
  child, its input closed, has exited). It may be called more than once.
  Leaving the transport's ``connect()`` context closes the stream whether
  or not it was called (the default ``aclose`` does nothing, for streams
  that leave closing to that context).
- Streams know bytes and JSON-RPC, no MCP method. What only one binding
  has is reached through typed attributes, as on anyio's streams:
  ``stream.extra(StreamAttribute.binding, None)`` is the stream's
  :class:`Binding` (the HTTP binding: the legacy version header, the GET
  listener, cancelling a request by closing its stream, the mirrored
  headers a request carries in :attr:`Request.headers
  <host_receiver.protocol.jsonrpc.Request.headers>`), and
  ``StreamAttribute.answers_every_request`` says whether the medium answers
  every request (HTTP: with an error status at least). A stream that wraps
  another forwards ``extra_attributes``.
- The hooks of 0.2 (``set_protocol_version``, ``open_listener``,
  ``abandon``, ``accept_tools``, ``silence_means_legacy``) are gone: a
  subclass that defines one fails at its definition with a
  :class:`TypeError` that says where each went.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
from anyio import TypedAttributeProvider, TypedAttributeSet, typed_attribute

# Re-exported: its old home (host_receiver._concurrency is where it lives now).
from host_receiver._concurrency import background_task_group
from host_receiver.errors import InvalidMessage
from host_receiver.protocol.jsonrpc import Message
from host_receiver.protocol.types import RequestId

__all__ = [
    "DEFAULT_MAX_MESSAGE_SIZE",
    "Binding",
    "MessageStream",
    "StreamAttribute",
    "Transport",
    "background_task_group",
]

#: The longest message a stream reads, in bytes, unless configured otherwise.
DEFAULT_MAX_MESSAGE_SIZE = 64 * 1024 * 1024

#: The hooks 0.2's MessageStream had, and where each went.
_REMOVED_HOOKS = {
    "set_protocol_version": "Binding.agree",
    "open_listener": "Binding.open_listener",
    "abandon": "Binding.abandon",
    "accept_tools": "the connection layer (tools are checked where headers are mirrored)",
    "silence_means_legacy": "StreamAttribute.answers_every_request",
}


class Binding:
    """What the MCP layer tells a stream's binding, and asks of it; the defaults do nothing.

    The HTTP binding is the one shipped (:class:`~host_receiver.transports.http.HttpTransport`).
    """

    #: Whether 2026-07-28 requests carry the binding's mirrored headers
    #: (:attr:`Request.headers <host_receiver.protocol.jsonrpc.Request.headers>`),
    #: which the connection layer computes.
    mirrors_headers: bool = False

    def agree(self, version: str) -> None:
        """A 2025-11-25-era handshake agreed on ``version``; called before ``initialized``."""

    async def open_listener(self) -> None:
        """Open the channel for messages the peer starts on its own, if there is one.

        Called once, after ``initialized`` was sent (legacy connections only).
        Returns when the channel is open (or known not to exist).
        """

    def abandon(self, request_id: RequestId) -> bool:
        """Nobody waits for ``request_id`` any more: True if the medium itself tells the peer.

        When it returns False, the session sends a cancellation notification.
        The 2026-07-28 HTTP binding cancels by closing the request's stream.
        """
        return False


class StreamAttribute(TypedAttributeSet):
    """What a stream offers beyond its four methods: ``stream.extra(StreamAttribute.name, default)``."""

    #: The stream's binding (absent: a medium with nothing to be told).
    binding: Binding = typed_attribute()
    #: True when the medium answers every request, even one the peer does not
    #: take (HTTP: with an error status), so a silent peer is not taken for a
    #: legacy one (absent: False).
    answers_every_request: bool = typed_attribute()
    #: How the messages travel, in OpenTelemetry's words (``network.transport``): ``pipe``
    #: for stdio, ``tcp`` for HTTP (absent: not known).
    network_transport: str = typed_attribute()
    #: The server's URL, for a network transport (absent: none).
    url: str = typed_attribute()
    #: The session the server opened (the legacy HTTP binding's ``Mcp-Session-Id``; None: none yet).
    session_id: str | None = typed_attribute()


class MessageStream(TypedAttributeProvider, ABC):
    """A bidirectional stream of JSON-RPC messages with one peer."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        old = [name for name in _REMOVED_HOOKS if name in vars(cls)]
        if old:
            moved = "; ".join(f"{name}: {_REMOVED_HOOKS[name]}" for name in old)
            raise TypeError(
                f"{cls.__qualname__} defines MessageStream hooks that are gone ({moved}); "
                "offer them through extra_attributes (StreamAttribute), see the changelog"
            )

    @abstractmethod
    async def send(self, message: Message) -> None:
        """Deliver ``message`` to the peer."""

    def send_nowait(self, message: Message) -> None:
        """Deliver ``message`` without waiting, or raise ``anyio.WouldBlock``."""
        raise anyio.WouldBlock

    @abstractmethod
    async def receive(self) -> Message | InvalidMessage:
        """The next message from the peer (see the module rules)."""

    async def aclose(self) -> None:
        """Close the stream (module rules); by default nothing, the transport's context closes it."""


class Transport(ABC):
    """How to reach one peer."""

    @abstractmethod
    def connect(self) -> AbstractAsyncContextManager[MessageStream]:
        """Open a connection; the stream is closed when the context exits."""
