"""What every part of a client connection stands on: its state, and what the agreement established.

:class:`ConnectionCore` declares the state a ``ClientConnection`` sets in its
constructor and while it opens, and reads it: the server's name, the version
and era spoken, the server's info and capabilities, the capabilities the
connection declares, and the facts its spans carry. The parts above it are
mixins over it: routing what the server sends (:mod:`._inbound`), sending
for the agreed era (:mod:`._sending`), the server's tasks
(:mod:`.remote_tasks._calls`) and tools, prompts and resources
(:mod:`._features`); :mod:`.connection` joins them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from host_receiver import telemetry
from host_receiver.client._mirror import HeaderMirror
from host_receiver.client._negotiation import Agreement
from host_receiver.client.options import ConnectionOptions
from host_receiver.client.remote_tasks._news import TaskNews
from host_receiver.protocol.modern import TASKS_EXTENSION
from host_receiver.protocol.results import ListedTool
from host_receiver.protocol.types import Implementation
from host_receiver.protocol.versions import LATEST_LEGACY_VERSION, Era, rules_of
from host_receiver.session import Session
from host_receiver.transports.base import Binding, MessageStream, StreamAttribute

if TYPE_CHECKING:
    from host_receiver.client._serving import ServerHandler, ServesServers

__all__ = ["ConnectionCore"]


class ConnectionCore:
    """The state of one client connection (set by ``ClientConnection``) and what it tells."""

    _stream: MessageStream
    _known_version: str | None  # what the server's origin agreed on before, if known
    _binding: Binding | None
    _mirror: HeaderMirror | None
    _receiver: ServesServers
    _handler: ServerHandler | None  # the receiver's scope, once attached
    _options: ConnectionOptions
    _telemetry: telemetry.Telemetry
    _network: dict[str, Any]
    _facts_of: tuple[str, str | None, dict[str, Any]] | None  # _facts, as last made
    _answered: telemetry.ServerCall | None  # answered at once, not yet recorded
    _named: bool
    _agreement: Agreement | None
    _tools: dict[str, ListedTool] | None  # the last full tools/list, until it changes
    _task_news: TaskNews
    _address: dict[str, Any] | None  # how to reach the server again (the task store's)
    _session: Session

    @property
    def options(self) -> ConnectionOptions:
        """How this connection was set up."""
        return self._options

    # --- what the connection declares ------------------------------------------

    def capabilities_for(self, version: str) -> dict[str, Any]:
        """The client capabilities this connection declares when speaking ``version``."""
        capabilities = self._receiver.capabilities(version)
        if self._options.tasks_extension and rules_of(version).era is Era.MODERN:
            extensions = dict(capabilities.get("extensions") or {})
            extensions[TASKS_EXTENSION] = {}
            capabilities = {**capabilities, "extensions": extensions}
        return capabilities

    def _facts(self) -> dict[str, Any]:
        """What every MCP span of this connection says of it (:func:`telemetry.facts`)."""
        version, session_id = self.protocol_version, self._stream.extra(StreamAttribute.session_id, None)
        made = self._facts_of
        if made is None or made[0] != version or made[1] != session_id:
            made = self._facts_of = (version, session_id, telemetry.facts(version, self._network, session_id))
        return made[2]

    # --- what the agreement established ------------------------------------

    @property
    def name(self) -> str:
        """The server's name in logs, prompts and the audit log."""
        return self._session.name

    @property
    def protocol_version(self) -> str:
        """The protocol version spoken (the newest handshake version, until the agreement)."""
        return self._agreement.version if self._agreement is not None else LATEST_LEGACY_VERSION

    @property
    def era(self) -> Era:
        """``Era.LEGACY`` (an ``initialize`` handshake) or ``Era.MODERN`` (per-request ``_meta``)."""
        return rules_of(self.protocol_version).era

    @property
    def server_info(self) -> Implementation:
        """The server's ``serverInfo``."""
        return self._agreed.server_info

    @property
    def server_capabilities(self) -> dict[str, Any]:
        """The server's ``capabilities``."""
        return self._agreed.server_capabilities

    @property
    def instructions(self) -> str | None:
        """The server's ``instructions``, if any."""
        return self._agreed.instructions

    @property
    def closed_reason(self) -> str | None:
        """Why the connection ended, in words (None while it is open)."""
        return self._session.closed_reason

    @property
    def _agreed(self) -> Agreement:
        if self._agreement is None:
            raise RuntimeError("the protocol agreement has not finished")
        return self._agreement

    @property
    def session(self) -> Session:
        """The JSON-RPC session underneath."""
        return self._session
