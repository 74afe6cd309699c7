"""Transports: how JSON-RPC messages reach an MCP server.

Each transport is a recipe (:class:`Transport`) whose ``connect()`` yields a
:class:`MessageStream`; see :mod:`host_receiver.transports.base` for the rules
they all follow. Shipped: stdio (a child process), Streamable HTTP, and an
in-memory pair for tests. What only one binding has is reached through
:class:`StreamAttribute` (``stream.extra(StreamAttribute.binding, None)``).
"""

from host_receiver.transports.base import Binding, MessageStream, StreamAttribute, Transport, TransportError
from host_receiver.transports.http import HttpTransport, SessionExpired
from host_receiver.transports.memory import MemoryStream, MemoryTransport, create_memory_pair
from host_receiver.transports.stdio import StdioTransport, safe_environment

__all__ = [
    "Binding",
    "HttpTransport",
    "MemoryStream",
    "MemoryTransport",
    "MessageStream",
    "SessionExpired",
    "StdioTransport",
    "StreamAttribute",
    "Transport",
    "TransportError",
    "create_memory_pair",
    "safe_environment",
]
