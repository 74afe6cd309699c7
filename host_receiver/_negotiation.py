"""Which protocol era and version a connection speaks: the handshake, the probe, the fallback.

Rules (basic-versioning.mdx; the stdio and Streamable HTTP pages, "Backward
Compatibility"):

- ``protocol="2025-11-25"`` (or another legacy version): the ``initialize``
  handshake, offering that version; the server's answer must be a legacy
  version this client speaks, else :class:`UnsupportedProtocolVersion`.
- ``protocol="2026-07-28"`` (modern only): a ``server/discover`` probe. A
  ``DiscoverResult`` whose ``supportedVersions`` share a modern version with
  this client agrees on it; -32022 names the server's versions, and a mutual
  modern one is tried once; anything else is a clear error saying the server
  does not speak the modern protocol.
- ``protocol="auto"`` (the default, a dual-era client): the same probe with
  the newest modern version. A ``DiscoverResult``, or a modern error
  (-32020, -32021, -32022), identifies a modern server, which is never
  answered with ``initialize`` unless it names a legacy version as one it
  supports. Any other error (whatever its code: legacy servers answer -32601,
  -32602, -32600, or HTTP 400 without a modern error body), a result that is
  no ``DiscoverResult``, or silence until ``discover_timeout``, identifies a
  legacy server: the ``initialize``
  handshake follows on the same connection.
- A version nobody shares, and a capability the server requires but this
  client did not declare (-32021), end in an error naming what is missing.
- The agreement is a property of the connection, found once (the spec's
  cache "for the lifetime of the server process or origin").
- What a server wrote (its name, versions, error messages, capability names)
  is quoted in these errors escaped and cut (:func:`providers.safe_text`):
  a host shows them as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from host_receiver.errors import HostReceiverError
from host_receiver.protocol.errors import RpcError
from host_receiver.protocol.modern import (
    HEADER_MISMATCH,
    MISSING_CAPABILITY,
    MODERN_ERROR_CODES,
    SERVER_INFO_KEY,
    UNSUPPORTED_VERSION,
    envelope,
)
from host_receiver.protocol.types import Implementation, InitializeResult, dump
from host_receiver.protocol.versions import (
    LATEST_LEGACY_VERSION,
    LATEST_MODERN_VERSION,
    LEGACY_VERSIONS,
    MODERN_VERSIONS,
    Era,
    rules_of,
)
from host_receiver.session import Session
from host_receiver.transports.http import HttpStatusError
from providers import safe_id, safe_logger, safe_text

__all__ = [
    "Agreement",
    "MissingCapability",
    "ProtocolError",
    "UnsupportedProtocolVersion",
    "agree",
    "describe_capabilities",
]

logger = safe_logger("host_receiver.connection")

AUTO = "auto"
#: The most characters of a server's text (an error message, a version list) quoted in an error.
_QUOTED = 300


class ProtocolError(HostReceiverError):
    """The server answered something MCP does not allow."""


class UnsupportedProtocolVersion(ProtocolError):
    """No protocol version is spoken by both this client and the server."""


class _NotDiscovered(ProtocolError):
    """A result to ``server/discover`` that is no ``DiscoverResult`` (a legacy server's, say)."""


class MissingCapability(ProtocolError):
    """The server needs a client capability this connection did not declare (-32021)."""

    def __init__(self, message: str, required: dict[str, Any]) -> None:
        super().__init__(message)
        self.required = required


@dataclass(frozen=True, slots=True)
class Agreement:
    """What a connection speaks, and what the server said of itself."""

    version: str
    server_info: Implementation
    server_capabilities: dict[str, Any]
    instructions: str | None = None
    #: The versions the server named (its ``supportedVersions``, or the one it chose).
    server_versions: tuple[str, ...] = ()

    @property
    def era(self) -> Era:
        return rules_of(self.version).era


CapabilitiesFor = Callable[[str], dict[str, Any]]


async def agree(
    session: Session,
    protocol: str,
    *,
    capabilities_for: CapabilitiesFor,
    client_info: Implementation,
    discover_timeout: float | None,
    init_timeout: float | None,
) -> Agreement:
    """Find the era and version to speak (rules in the module docstring)."""
    if protocol != AUTO and protocol not in LEGACY_VERSIONS and protocol not in MODERN_VERSIONS:
        known = ", ".join((AUTO, *MODERN_VERSIONS, *LEGACY_VERSIONS))
        raise ValueError(f"unknown protocol choice {protocol!r} (one of {known})")
    if protocol in LEGACY_VERSIONS:
        return await _initialize(session, protocol, capabilities_for(protocol), client_info, init_timeout)
    modern_only = protocol != AUTO
    offered = protocol if modern_only else LATEST_MODERN_VERSION
    tried: set[str] = set()
    while True:
        tried.add(offered)
        try:
            return await _discover(session, offered, capabilities_for(offered), client_info, discover_timeout)
        except RpcError as exc:
            if exc.code not in MODERN_ERROR_CODES:
                if modern_only:
                    answer = f"JSON-RPC error {exc.code}: {exc.message}"
                    raise _not_modern(session.name, offered, answer) from None
                _legacy(session.name, f"error {exc.code}")
                break
            if exc.code == MISSING_CAPABILITY:
                raise _missing(session.name, "server/discover", exc) from None
            if exc.code == HEADER_MISMATCH:
                raise ProtocolError(
                    f"{session.name} refused this client's headers: {safe_text(exc.message, _QUOTED)}"
                ) from None
            supported = _versions(exc.data)
            mutual = [v for v in MODERN_VERSIONS if v in supported and v not in tried]
            if mutual:
                offered = mutual[0]
                continue
            legacy = [v for v in LEGACY_VERSIONS if v in supported]
            if legacy and not modern_only:
                caps = capabilities_for(legacy[0])
                return await _initialize(session, legacy[0], caps, client_info, init_timeout)
            raise _no_mutual_version(session.name, supported) from None
        except HttpStatusError as exc:
            if modern_only:
                raise _not_modern(session.name, offered, str(exc)) from None
            if exc.status >= 500:
                raise
            _legacy(session.name, f"HTTP {exc.status}")
            break
        except _NotDiscovered as exc:
            if modern_only:
                raise _not_modern(session.name, offered, str(exc)) from None
            _legacy(session.name, "not a DiscoverResult")
            break
        except TimeoutError:
            if modern_only:
                raise _not_modern(session.name, offered, f"no answer within {discover_timeout} s") from None
            _legacy(session.name, "no answer")
            break
    return await _initialize(
        session, LATEST_LEGACY_VERSION, capabilities_for(LATEST_LEGACY_VERSION), client_info, init_timeout
    )


async def _discover(
    session: Session,
    version: str,
    capabilities: dict[str, Any],
    client_info: Implementation,
    timeout: float | None,
) -> Agreement:
    params = {"_meta": envelope(version, dump(client_info), capabilities)}
    result = await session.request("server/discover", params, timeout=timeout)
    supported = _versions(result)
    if not supported:
        raise _NotDiscovered(f"{session.name} answered server/discover without supportedVersions")
    if version not in supported:
        mutual = [v for v in MODERN_VERSIONS if v in supported]
        if not mutual:
            raise _no_mutual_version(session.name, supported)
        version = mutual[0]
    meta = result.get("_meta")
    raw_info = meta.get(SERVER_INFO_KEY) if isinstance(meta, dict) else None
    try:
        info = Implementation.model_validate(raw_info) if raw_info is not None else None
    except ValidationError:
        info = None
    capabilities_of_server = result.get("capabilities")
    instructions = result.get("instructions")
    return Agreement(
        version=version,
        server_info=info or Implementation(name=session.name, version="unknown"),
        server_capabilities=capabilities_of_server if isinstance(capabilities_of_server, dict) else {},
        instructions=instructions if isinstance(instructions, str) else None,
        server_versions=supported,
    )


async def _initialize(
    session: Session,
    version: str,
    capabilities: dict[str, Any],
    client_info: Implementation,
    timeout: float | None,
) -> Agreement:
    params = {"protocolVersion": version, "capabilities": capabilities, "clientInfo": dump(client_info)}
    try:
        result = await session.request("initialize", params, timeout=timeout)
    except RpcError as exc:
        if exc.code != UNSUPPORTED_VERSION:
            raise
        raise _no_mutual_version(session.name, _versions(exc.data), asked=version) from None
    try:
        init = InitializeResult.model_validate(result)
    except ValidationError as exc:
        raise ProtocolError(
            f"{session.name} sent an invalid initialize result: {safe_text(exc, _QUOTED)}"
        ) from None
    if init.protocol_version not in LEGACY_VERSIONS:
        raise UnsupportedProtocolVersion(
            f"{safe_text(init.server_info.name, 120)} wants MCP protocol version "
            f"'{safe_id(init.protocol_version)}' in the "
            f"handshake; this client supports {', '.join(LEGACY_VERSIONS)} there"
        )
    return Agreement(
        version=init.protocol_version,
        server_info=init.server_info,
        server_capabilities=init.capabilities,
        instructions=init.instructions,
        server_versions=(init.protocol_version,),
    )


def describe_capabilities(capabilities: object, prefix: str = "") -> str:
    """``{"elicitation": {"url": {}}}`` as ``elicitation.url``, each leaf named."""
    if not isinstance(capabilities, dict) or not capabilities:
        return prefix or "(nothing named)"
    parts = [describe_capabilities(v, f"{prefix}.{k}" if prefix else str(k)) for k, v in capabilities.items()]
    return ", ".join(parts)


def missing_capability(server: str, method: str, error: RpcError) -> MissingCapability:
    """The clear error for a -32021 answer to ``method``."""
    return _missing(server, method, error)


def _missing(server: str, method: str, error: RpcError) -> MissingCapability:
    required = error.data.get("requiredCapabilities") if isinstance(error.data, dict) else None
    required = required if isinstance(required, dict) else {}
    return MissingCapability(
        f"{server} refused {method}: it needs the client capability "
        f"{safe_text(describe_capabilities(required), _QUOTED)}, "
        f"which this connection does not declare ({safe_text(error.message, _QUOTED)})",
        required,
    )


def _legacy(server: str, answer: str) -> None:
    logger.info("%s is a legacy server (server/discover: %s); initializing", server, answer)


def _versions(data: object) -> tuple[str, ...]:
    """The ``supported`` (-32022) or ``supportedVersions`` (discover) list, strings only."""
    if not isinstance(data, dict):
        return ()
    raw = data.get("supportedVersions", data.get("supported"))
    return tuple(v for v in raw if isinstance(v, str)) if isinstance(raw, list) else ()


def _no_mutual_version(
    server: str, supported: tuple[str, ...], *, asked: str | None = None
) -> UnsupportedProtocolVersion:
    theirs = safe_text(", ".join(supported), _QUOTED) or "none it would name"
    ours = asked or ", ".join((*MODERN_VERSIONS, *LEGACY_VERSIONS))
    return UnsupportedProtocolVersion(
        f"{server} and this client share no MCP protocol version: it supports {theirs}; this client {ours}"
    )


def _not_modern(server: str, version: str, answer: str) -> UnsupportedProtocolVersion:
    return UnsupportedProtocolVersion(
        f"{server} does not speak MCP {version}: server/discover got {safe_text(answer, _QUOTED)}. "
        "It may be a legacy (initialize) server: use protocol 'auto' or '2025-11-25'"
    )
