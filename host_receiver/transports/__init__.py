"""Transports: how JSON-RPC messages reach an MCP server.

Each transport is a recipe (:class:`Transport`) whose ``connect()`` yields a
:class:`MessageStream`; see :mod:`host_receiver.transports.base` for the rules
they all follow. Shipped: stdio (a child process), Streamable HTTP, and an
in-memory pair for tests.
"""

from host_receiver.transports.base import MessageStream, Transport, TransportError
from host_receiver.transports.http import HttpTransport, SessionExpired
from host_receiver.transports.memory import MemoryStream, MemoryTransport, create_memory_pair
from host_receiver.transports.stdio import StdioTransport, safe_environment

__all__ = [
    "HttpTransport",
    "MemoryStream",
    "MemoryTransport",
    "MessageStream",
    "SessionExpired",
    "StdioTransport",
    "Transport",
    "TransportError",
    "create_memory_pair",
    "safe_environment",
]
