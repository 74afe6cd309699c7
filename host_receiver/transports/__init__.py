"""Transports: how JSON-RPC messages reach an MCP server.

Each transport is a recipe (:class:`Transport`) whose ``connect()`` yields a
:class:`MessageStream`; see :mod:`host_receiver.transports.base` for the rules
they all follow. Shipped: stdio (a child process), Streamable HTTP, the
deprecated HTTP+SSE transport of 2024-11-05 (the fallback of a URL whose
server predates Streamable HTTP), and an in-memory pair for tests. What only
one binding has is reached through :class:`StreamAttribute` (``stream.extra(StreamAttribute.binding, None)``).
May import protocol, the lean HTTP stack (:mod:`host_receiver._net`) and the
base; never the session or anything above it, and no MCP method name.
"""

from typing import TYPE_CHECKING

from host_receiver._moved import moved_names
from host_receiver.transports.base import Binding, MessageStream, StreamAttribute, Transport
from host_receiver.transports.http import HttpTransport
from host_receiver.transports.memory import MemoryStream, MemoryTransport, create_memory_pair
from host_receiver.transports.sse import SseTransport
from host_receiver.transports.stdio import StdioTransport, safe_environment

__all__ = [
    "Binding",
    "HttpTransport",
    "MemoryStream",
    "MemoryTransport",
    "MessageStream",
    "SseTransport",
    "StdioTransport",
    "StreamAttribute",
    "Transport",
    "create_memory_pair",
    "safe_environment",
]

if not TYPE_CHECKING:  # a type checker flags a moved name
    #: Names that moved to their one door (served with a DeprecationWarning until 0.4).
    __getattr__ = moved_names(
        __name__,
        dict.fromkeys(
            (
                "SessionExpired",
                "TransportError",
            ),
            "host_receiver.errors",
        ),
    )
