"""Discovery: which authorization server protects an MCP server, and what it offers.

Rules (MCP 2025-11-25 and 2026-07-28, "Authorization Server Discovery"):

- Protected resource metadata (RFC 9728) comes from the ``resource_metadata``
  URL of the 401's Bearer challenge when there is one, else from the
  path-based well-known URL, then the root one. A location that answers
  anything but a 200 JSON object is skipped for the next.
- A found document must name the server as its ``resource``
  (:func:`~host_receiver.auth._urls.resource_matches`): otherwise
  :class:`ResourceMismatch`, at once (no further location is tried), and
  nothing is sent to the authorization server it names. It must list at
  least one ``authorization_servers`` entry; the first is used.
- Authorization server metadata is tried at RFC 8414 then OpenID Connect
  locations in the MCP order (:func:`~host_receiver.auth._urls.as_metadata_urls`).
  The first 200 JSON object is the answer, and its ``issuer`` must be
  identical (plain string comparison) to the issuer the well-known URL was
  built from, else :class:`DiscoveryError`: the document is not used.
- No resource metadata at all (a 2025-03-26 server): the authorization
  server is the server's origin; its metadata is looked up at the origin's
  well-known locations, where the document's ``issuer`` is taken as given
  (the 2025-03-26 revision has no issuer to compare with) but must be on the
  server's origin. Without a document, the endpoints default to
  ``/authorize``, ``/token`` and ``/register`` on the origin.
- Every URL an authorization server is reached at passes
  :func:`~host_receiver.auth._urls.require_secure` before use; the resource
  metadata location must be https, loopback, or on the server's own origin.
- Metadata GETs follow redirects; bodies over 256 KiB are refused.

Fixed caps (docs/limits.md): ``_MAX_DOCUMENT``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from host_receiver._net.body import decoded
from host_receiver.auth._challenge import BearerChallenge
from host_receiver.auth._quote import quote, safe_url
from host_receiver.auth._urls import (
    as_metadata_urls,
    canonical_resource,
    origin,
    prm_urls,
    require_secure,
    resource_matches,
)
from host_receiver.errors import DiscoveryError, ResourceMismatch
from host_receiver.sanitize import safe_logger

__all__ = [
    "Discovery",
    "ResourceMetadata",
    "ServerMetadata",
    "discover",
    "fetch_resource_metadata",
    "fetch_server_metadata",
    "read_limited",
]

logger = safe_logger("host_receiver.auth")

_MAX_DOCUMENT = 256 * 1024


@dataclass(frozen=True)
class ResourceMetadata:
    """The MCP server as its protected resource metadata describes it."""

    resource: str
    authorization_servers: tuple[str, ...]
    scopes_supported: tuple[str, ...] | None
    location: str | None  # None: no metadata (2025-03-26), ``resource`` is the server's canonical URI


@dataclass(frozen=True)
class ServerMetadata:
    """An authorization server's metadata (RFC 8414 / OpenID Connect Discovery)."""

    issuer: str | None
    document: Mapping[str, Any] = field(repr=False)
    location: str | None
    legacy: bool = False

    def url(self, name: str) -> str | None:
        value = self.document.get(name)
        return value if isinstance(value, str) and value else None

    def strings(self, name: str) -> tuple[str, ...] | None:
        """A list-of-strings field; None when absent or not a list."""
        value = self.document.get(name)
        if not isinstance(value, list):
            return None
        return tuple(item for item in value if isinstance(item, str))

    def flag(self, name: str) -> bool:
        return self.document.get(name) is True


@dataclass(frozen=True)
class Discovery:
    resource: ResourceMetadata
    server: ServerMetadata


async def discover(http: httpx.AsyncClient, server_url: str, challenge: BearerChallenge | None) -> Discovery:
    """Resource metadata, then the metadata of the authorization server it names."""
    resource = await fetch_resource_metadata(http, server_url, challenge)
    if resource.location is None:
        return Discovery(resource, await _legacy_server_metadata(http, server_url))
    issuer = resource.authorization_servers[0]
    return Discovery(resource, await fetch_server_metadata(http, issuer))


async def fetch_resource_metadata(
    http: httpx.AsyncClient, server_url: str, challenge: BearerChallenge | None
) -> ResourceMetadata:
    candidates: list[str] = []
    if challenge is not None and challenge.resource_metadata:
        candidates.append(_check_prm_location(challenge.resource_metadata, server_url))
    candidates.extend(url for url in prm_urls(server_url) if url not in candidates)
    for url in candidates:
        document = await _get_json(http, url)
        if document is None:
            continue
        return _resource_metadata(document, url, server_url)
    logger.info("no protected resource metadata for %s; using the 2025-03-26 defaults", safe_url(server_url))
    return ResourceMetadata(canonical_resource(server_url), (origin(server_url),), None, None)


def _check_prm_location(url: str, server_url: str) -> str:
    try:
        same_origin = origin(url) == origin(server_url)
    except ValueError:
        raise DiscoveryError(f"the server named an invalid resource metadata URL: {quote(url)}") from None
    if same_origin:
        return url
    return require_secure(url, "resource metadata URL")


def _resource_metadata(document: Mapping[str, Any], url: str, server_url: str) -> ResourceMetadata:
    declared = document.get("resource")
    if not isinstance(declared, str) or not resource_matches(declared, server_url):
        raise ResourceMismatch(
            f"the protected resource metadata at {safe_url(url)} is for resource "
            f"{quote(declared) if isinstance(declared, str) else '(none)'}, not for "
            f"{safe_url(server_url)}; refusing to authorize"
        )
    servers = document.get("authorization_servers")
    if not isinstance(servers, list) or not servers or not all(isinstance(s, str) and s for s in servers):
        raise DiscoveryError(
            f"the protected resource metadata at {safe_url(url)} names no authorization server"
        )
    scopes = document.get("scopes_supported")
    scopes_supported = (
        tuple(s for s in scopes if isinstance(s, str) and s) if isinstance(scopes, list) else None
    )
    logger.info("resource metadata at %s: authorization server %s", safe_url(url), quote(servers[0]))
    return ResourceMetadata(canonical_resource(declared), tuple(servers), scopes_supported, url)


async def fetch_server_metadata(http: httpx.AsyncClient, issuer: str) -> ServerMetadata:
    """The metadata of the authorization server ``issuer``, issuer-checked."""
    require_secure(issuer, "authorization server")
    tried: list[str] = []
    for url in as_metadata_urls(issuer):
        tried.append(url)
        document = await _get_json(http, url)
        if document is None:
            continue
        if document.get("issuer") != issuer:
            stated = document.get("issuer")
            raise DiscoveryError(
                f"the authorization server metadata at {safe_url(url)} states issuer "
                f"{quote(stated) if isinstance(stated, str) else '(none)'}, not {quote(issuer)}; "
                "refusing to use it"
            )
        logger.info("authorization server metadata for %s from %s", quote(issuer), safe_url(url))
        return ServerMetadata(issuer, document, url)
    raise DiscoveryError(
        f"no authorization server metadata for {quote(issuer)} (tried {', '.join(map(safe_url, tried))})"
    )


async def _legacy_server_metadata(http: httpx.AsyncClient, server_url: str) -> ServerMetadata:
    base = origin(server_url)
    for url in as_metadata_urls(base):
        document = await _get_json(http, url)
        if document is None:
            continue
        issuer = document.get("issuer")
        if not isinstance(issuer, str) or _origin_or_none(issuer) != base:
            raise DiscoveryError(
                f"the authorization server metadata at {safe_url(url)} states issuer "
                f"{quote(issuer) if isinstance(issuer, str) else '(none)'}, not on {safe_url(base)}"
            )
        logger.info("2025-03-26 authorization server metadata from %s", safe_url(url))
        return ServerMetadata(issuer, document, url, legacy=True)
    logger.info("no authorization server metadata on %s; using the default endpoints", safe_url(base))
    defaults = {
        "authorization_endpoint": f"{base}/authorize",
        "token_endpoint": f"{base}/token",
        "registration_endpoint": f"{base}/register",
    }
    return ServerMetadata(None, defaults, None, legacy=True)


def _origin_or_none(url: str) -> str | None:
    try:
        return origin(url)
    except ValueError:
        return None


async def _get_json(http: httpx.AsyncClient, url: str) -> Mapping[str, Any] | None:
    """The JSON object at ``url``; None when it answers anything else (or not at all)."""
    try:
        async with http.stream(
            "GET", url, headers={"accept": "application/json"}, follow_redirects=True
        ) as response:
            if response.status_code != 200:
                logger.debug("%s answered HTTP %d", safe_url(url), response.status_code)
                return None
            body = await read_limited(response)
    except httpx.HTTPError as exc:
        logger.debug("GET %s failed: %s", safe_url(url), type(exc).__name__)
        return None
    if body is None:
        logger.info("%s sent a document over %d bytes; ignored", safe_url(url), _MAX_DOCUMENT)
        return None
    try:
        document = json.loads(body)
    except ValueError:
        logger.info("%s did not send JSON; ignored", safe_url(url))
        return None
    return document if isinstance(document, dict) else None


async def read_limited(response: httpx.Response, limit: int = _MAX_DOCUMENT) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    async for chunk in decoded(response):
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def json_object(body: bytes | None) -> dict[str, Any] | None:
    """``body`` parsed as a JSON object; None for no body, not JSON or JSON of another type."""
    if body is None:
        return None
    try:
        document = json.loads(body)
    except ValueError:
        return None
    return document if isinstance(document, dict) else None
