"""The base exception of host-receiver; every exception the library raises derives from it.

:class:`HostReceiverError` is defined in ``providers`` (the bottom layer, so
that provider errors derive from it too) and re-exported here. Under it:
``RpcError`` (a JSON-RPC error, with its code; ``InvalidMessage`` for a bad
frame), ``TransportError`` (``SessionExpired``), ``ConnectionClosed``,
``ProtocolError`` (``UnsupportedProtocolVersion``), ``IllegalTransition``,
``InvalidCursor``, and ``providers.ProviderError`` (``ConfigError``,
``NoSuitableModel``, ``UnsupportedRequest``, ``LimitExceeded``).
"""

from providers import HostReceiverError

__all__ = ["HostReceiverError"]
