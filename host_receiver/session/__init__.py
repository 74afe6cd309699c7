"""The JSON-RPC session: one peer, one message stream, traffic both ways (docs/api.md, "Sessions").

Holds the session (:mod:`._session`: request ids, dispatch, cancellation,
progress, ping) and its outbox (:mod:`._outbox`: sending without waiting).
May import the base (errors, sanitize, telemetry), protocol and transports;
nothing of receiving, handlers, people or clients.
"""

from host_receiver.session._session import (
    IncomingRequest,
    NotificationHandler,
    ProgressCallback,
    RequestHandler,
    Session,
)

__all__ = [
    "IncomingRequest",
    "NotificationHandler",
    "ProgressCallback",
    "RequestHandler",
    "Session",
]
