"""The server as the receiver sees it: a name, a protocol version, a way to notify it.

The receiver serves requests from a server it never talks to directly. What
it needs of that server's connection is this one small interface, which
host-receiver's own :class:`~host_receiver.client.connection.ClientConnection`
implements and an adapter implements for another MCP client's session.

Rules:

- ``name`` labels the server in approval views, prompts and the audit log.
- ``protocol_version`` is read whenever a rule depends on it (it may become
  known only after the handshake); it is always a version this project knows.
- ``notify`` sends a notification, waiting while the connection is busy;
  ``notify_soon`` never waits and never raises (it queues, or drops with a
  log once the connection is gone). Task status notifications use
  ``notify_soon``, so that finishing a task never waits on the peer.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["Peer"]


class Peer(Protocol):
    """What the receiver needs of one server connection."""

    @property
    def name(self) -> str:
        """The server's name for people and logs."""
        ...

    @property
    def protocol_version(self) -> str:
        """The protocol version spoken with this server."""
        ...

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification, waiting while the connection is busy."""
        ...

    def notify_soon(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification without waiting; never raises."""
        ...
