"""Which protocol era and version a connection speaks: the handshake, the probe, the fallback.

(About 450 lines, one idea: every way the two eras agree on a version, and
its retries, in one place.)

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
  -32602, -32600, or HTTP 400 without a modern error body), or a result that
  is no ``DiscoverResult``, identifies a legacy server: the ``initialize``
  handshake follows on the same connection. So does silence until
  ``discover_timeout`` on stdio (counted from the probe, which is sent as
  the process starts); on HTTP a legacy server answers with a status, so
  silence (until ``init_timeout``) is a ``TimeoutError``, not a legacy server
  (``StreamAttribute.answers_every_request``). On HTTP the probe carries the
  binding's mirrored headers (:mod:`host_receiver.client._mirror`), as every
  modern request does.
- A timeout is a guess: a modern server that starts slowly may miss it. In
  ``auto`` mode an ``initialize`` refused with -32022 whose ``supported``
  names a modern version this client speaks identifies a modern server
  (basic-versioning.mdx: a modern error identifies a modern server): it is
  probed again with ``server/discover`` at that version, never falling back,
  and waited for as long as ``initialize`` is (``init_timeout``), since its
  silence no longer hints at a legacy server.
- A version nobody shares, and a capability the server requires but this
  client did not declare (-32021), end in an error naming what is missing
  (in ``auto`` mode, every version this client speaks).
- A -32022 whose ``supported`` lists the very version that was requested
  contradicts itself: the request is sent once more, unchanged; refused
  again, it ends in an error saying just that (:func:`version_refused`).
- The reason for a fallback is logged at DEBUG: the connection's one INFO
  line names the era.
- The agreement is a property of the connection, found once; a ``Host``
  keeps the version each HTTP origin agreed on (the spec's cache "for the
  lifetime of the server process or origin") and gives it to the next
  connection there as ``known_version``: in ``auto`` mode a known legacy
  version is offered with ``initialize`` at once, with no probe; should that
  fail (the server changed), the probe runs as for an unknown server.
- What a server wrote (its name, versions, error messages, capability names)
  is quoted in these errors escaped and cut (:func:`host_receiver.sanitize.safe_text`):
  a host shows them as they are.

Fixed caps (docs/limits.md): ``_QUOTED``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from host_receiver.client._mirror import HeaderMirror
from host_receiver.client.options import AUTO, ConnectionOptions
from host_receiver.errors import (
    HttpStatusError,
    MissingCapability,
    ProtocolError,
    RpcError,
    UnsupportedProtocolVersion,
)
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
from host_receiver.sanitize import safe_id, safe_logger, safe_text
from host_receiver.session import Session
from host_receiver.telemetry import ClientCall

__all__ = [
    "Agreement",
    "agree",
    "describe_capabilities",
]

logger = safe_logger("host_receiver.client.connection")

#: The most characters of a server's text (an error message, a version list) quoted in an error.
_QUOTED = 300


class _NotDiscovered(ProtocolError):
    """A result to ``server/discover`` that is no ``DiscoverResult`` (a legacy server's, say)."""


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
    options: ConnectionOptions,
    *,
    capabilities_for: CapabilitiesFor,
    silence_means_legacy: bool = True,
    mirror: HeaderMirror | None = None,
    known_version: str | None = None,
    traced: Traced | None = None,
) -> Agreement:
    """Find the era and version to speak (rules in the module docstring), as ``options`` choose;
    ``known_version``: what the server's origin agreed on before; ``traced``: the CLIENT span of
    each request sent (``server/discover``, ``initialize``)."""
    protocol = options.protocol
    talk = _Talk(
        session,
        capabilities_for,
        options.client_info,
        options.discover_timeout,
        options.init_timeout,
        silence_means_legacy,
        mirror,
        traced or _untraced,
    )
    if protocol in LEGACY_VERSIONS:
        return await talk.initialize(protocol, auto=False)
    auto = protocol == AUTO
    if auto and known_version in LEGACY_VERSIONS:
        try:
            return await talk.initialize(str(known_version), auto=True)
        except (RpcError, ProtocolError, HttpStatusError) as exc:
            logger.debug("%s no longer answers as before (%s); probing afresh", session.name, exc)
    found = await talk.probe(LATEST_MODERN_VERSION if auto else protocol, auto=auto, fallback=auto)
    if isinstance(found, Agreement):
        return found
    return await talk.initialize(found, auto=True)


#: The CLIENT span of one request of the agreement: send ``call.params`` (they carry its context).
Traced = Callable[[str, dict[str, Any]], AbstractContextManager[ClientCall]]


@contextmanager
def _untraced(method: str, params: dict[str, Any]) -> Iterator[ClientCall]:
    call = ClientCall(None)
    call.params = params
    yield call


@dataclass(frozen=True, slots=True)
class _Talk:
    """The probe and the handshake of one agreement, with what they need."""

    session: Session
    capabilities_for: CapabilitiesFor
    client_info: Implementation
    discover_timeout: float | None
    init_timeout: float | None
    silence_means_legacy: bool
    mirror: HeaderMirror | None
    traced: Traced

    async def probe(self, offered: str, *, auto: bool, fallback: bool) -> Agreement | str:
        """``server/discover`` until an agreement, or (with ``fallback``) the legacy version to
        initialize with when the answer identifies a legacy server."""
        name = self.session.name
        ours = _ours(auto, offered)
        # Silence can mean a legacy server only while one may still be found: probing again after
        # a modern refusal of initialize, the server is known modern and gets init_timeout.
        silence_means_legacy = self.silence_means_legacy and fallback
        waited = self.discover_timeout if silence_means_legacy else self.init_timeout

        def legacy(answer: str) -> str:
            if fallback:
                return _legacy(name, answer)
            if auto:  # probing again after initialize was refused as by a modern server
                raise ProtocolError(
                    f"{name} refused initialize naming MCP {offered}, "
                    f"yet server/discover got {safe_text(answer, _QUOTED)}"
                )
            raise _not_modern(name, offered, answer)

        tried: set[str] = set()
        retried = False
        while True:
            tried.add(offered)
            try:
                capabilities = self.capabilities_for(offered)
                return await _discover(
                    self.session,
                    offered,
                    capabilities,
                    self.client_info,
                    waited,
                    ours,
                    self.mirror,
                    self.traced,
                )
            except RpcError as exc:
                if exc.code not in MODERN_ERROR_CODES:
                    return legacy(f"JSON-RPC error {exc.code}: {exc.message}")
                if exc.code == MISSING_CAPABILITY:
                    raise _missing(name, "server/discover", exc) from None
                if exc.code == HEADER_MISMATCH:
                    raise ProtocolError(
                        f"{name} refused this client's headers: {safe_text(exc.message, _QUOTED)}"
                    ) from None
                supported = _versions(exc.data)
                if offered in supported:
                    if retried:
                        raise version_refused(name, "server/discover", offered, exc, again=True) from None
                    logger.debug("%s refused %s although it lists it as supported; once more", name, offered)
                    retried = True
                    continue
                mutual = [v for v in MODERN_VERSIONS if v in supported and v not in tried]
                if mutual:
                    offered = mutual[0]
                    continue
                handshake = [v for v in LEGACY_VERSIONS if v in supported]
                if handshake and fallback:
                    return handshake[0]
                raise _no_mutual_version(name, supported, ours=ours) from None
            except HttpStatusError as exc:
                if exc.status >= 500 and fallback:
                    raise
                return legacy(str(exc))
            except _NotDiscovered as exc:
                return legacy(str(exc))
            except TimeoutError:
                if not silence_means_legacy:
                    why = (
                        "it refused initialize as a modern server"
                        if self.silence_means_legacy
                        else "on this transport a legacy server answers with an error"
                    )
                    raise TimeoutError(
                        f"{name} did not answer server/discover within {_seconds(waited)} ({why}, "
                        "so silence is not taken for a legacy server)"
                    ) from None
                return legacy(f"no answer within {_seconds(waited)}")

    async def initialize(self, version: str, *, auto: bool) -> Agreement:
        """The ``initialize`` handshake offering ``version``. In ``auto`` mode, a -32022 naming a
        modern version this client speaks identifies a modern server: probed again at that version."""
        try:
            return await _initialize(
                self.session,
                version,
                self.capabilities_for(version),
                self.client_info,
                self.init_timeout,
                self.traced,
            )
        except RpcError as exc:
            if exc.code != UNSUPPORTED_VERSION:
                raise
            supported = _versions(exc.data)
            modern = [v for v in MODERN_VERSIONS if v in supported]
            if not (auto and modern):
                raise _no_mutual_version(self.session.name, supported, ours=_ours(auto, version)) from None
        logger.debug(
            "%s refused initialize as a modern server; probing with %s", self.session.name, modern[0]
        )
        found = await self.probe(modern[0], auto=True, fallback=False)
        assert isinstance(found, Agreement)  # without fallback: an agreement or an error
        return found


async def _discover(
    session: Session,
    version: str,
    capabilities: dict[str, Any],
    client_info: Implementation,
    timeout: float | None,
    ours: tuple[str, ...],
    mirror: HeaderMirror | None,
    traced: Traced,
) -> Agreement:
    params = {"_meta": envelope(version, dump(client_info), capabilities)}
    with traced("server/discover", params) as call:
        sent = call.params or params
        headers = mirror.headers("server/discover", sent) if mirror is not None else None
        result = await session.request("server/discover", sent, timeout=timeout, headers=headers)
    supported = _versions(result)
    if not supported:
        raise _NotDiscovered(f"{session.name} answered server/discover without supportedVersions")
    if version not in supported:
        mutual = [v for v in MODERN_VERSIONS if v in supported]
        if not mutual:
            raise _no_mutual_version(session.name, supported, ours=ours)
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
    traced: Traced,
) -> Agreement:
    params = {"protocolVersion": version, "capabilities": capabilities, "clientInfo": dump(client_info)}
    with traced("initialize", params) as call:
        try:
            result = await session.request("initialize", call.params or params, timeout=timeout)
        except TimeoutError:
            waited = _seconds(timeout)
            raise TimeoutError(f"{session.name} did not answer initialize within {waited}") from None
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


def _seconds(value: float | None) -> str:
    """A timeout as a person reads it: ``10 s``, ``2.5 s``."""
    return f"{value:g} s" if value is not None else "no bound"


def describe_capabilities(capabilities: object, prefix: str = "") -> str:
    """``{"elicitation": {"url": {}}}`` as ``elicitation.url``, each leaf named."""
    if not isinstance(capabilities, dict) or not capabilities:
        return prefix or "(nothing named)"
    parts = [describe_capabilities(v, f"{prefix}.{k}" if prefix else str(k)) for k, v in capabilities.items()]
    return ", ".join(parts)


def missing_capability(server: str, method: str, error: RpcError) -> MissingCapability:
    """The clear error for a -32021 answer to ``method``."""
    return _missing(server, method, error)


def lists_refused_version(version: str, error: RpcError) -> bool:
    """Whether a -32022 lists as supported the ``version`` it refused (sent once more, then an error)."""
    return version in _versions(error.data)


def version_refused(
    server: str, method: str, version: str, error: RpcError, *, again: bool = False
) -> UnsupportedProtocolVersion:
    """The clear error for a -32022 answer to ``method`` in ``version`` (the agreed one, or the
    one probed); ``again``: the second such answer, although it lists ``version`` as supported."""
    if again:
        return UnsupportedProtocolVersion(
            f"{server} refused {method} in MCP {version} twice with -32022 (unsupported protocol "
            f"version), although the error lists {version} as supported; the server contradicts itself "
            f"({safe_text(error.message, _QUOTED)})"
        )
    theirs = safe_text(", ".join(_versions(error.data)), _QUOTED) or "none it would name"
    return UnsupportedProtocolVersion(
        f"{server} refused {method} in MCP {version}, the version agreed (it supports {theirs}); "
        "a new connection agrees on a version afresh"
    )


def _missing(server: str, method: str, error: RpcError) -> MissingCapability:
    required = error.data.get("requiredCapabilities") if isinstance(error.data, dict) else None
    required = required if isinstance(required, dict) else {}
    return MissingCapability(
        f"{server} refused {method}: it needs the client capability "
        f"{safe_text(describe_capabilities(required), _QUOTED)}, "
        f"which this connection does not declare ({safe_text(error.message, _QUOTED)})",
        required,
    )


def _legacy(server: str, answer: str) -> str:
    """The legacy version to initialize with; the reason is logged at DEBUG (the era's INFO line
    is the connection's own)."""
    logger.debug("%s is a legacy server (server/discover: %s); initializing", server, answer)
    return LATEST_LEGACY_VERSION


def _versions(data: object) -> tuple[str, ...]:
    """The ``supported`` (-32022) or ``supportedVersions`` (discover) list, strings only."""
    if not isinstance(data, dict):
        return ()
    raw = data.get("supportedVersions", data.get("supported"))
    return tuple(v for v in raw if isinstance(v, str)) if isinstance(raw, list) else ()


def _ours(auto: bool, version: str) -> tuple[str, ...]:
    """The versions this connection speaks: every one in ``auto`` mode, else the one chosen."""
    return (*MODERN_VERSIONS, *LEGACY_VERSIONS) if auto else (version,)


def _no_mutual_version(
    server: str, supported: tuple[str, ...], *, ours: tuple[str, ...]
) -> UnsupportedProtocolVersion:
    theirs = safe_text(", ".join(supported), _QUOTED) or "none it would name"
    return UnsupportedProtocolVersion(
        f"{server} and this client share no MCP protocol version: it supports {theirs}; "
        f"this client {', '.join(ours)}"
    )


def _not_modern(server: str, version: str, answer: str) -> UnsupportedProtocolVersion:
    return UnsupportedProtocolVersion(
        f"{server} does not speak MCP {version}: server/discover got {safe_text(answer, _QUOTED)}. "
        "It may be a legacy (initialize) server: use protocol 'auto' or '2025-11-25'"
    )
