"""Client identity at an authorization server, in the order MCP prefers.

Rules ("Client Registration", 2025-11-25 and 2026-07-28):

1. A pre-registered client (``client_id``, with a secret or a private key
   when it is confidential). When it was registered with a stated issuer and
   the server now names another one, that is an error, not a silent reuse.
2. A Client ID Metadata Document: its URL is the ``client_id`` when the
   server's metadata sets ``client_id_metadata_document_supported``. The URL
   must be https with a path. Such a client authenticates with ``none``.
3. Dynamic client registration (RFC 7591) at ``registration_endpoint``. A
   registration kept from earlier for the same server and issuer is reused
   while its secret has not expired and it lists the redirect URI in use;
   otherwise the client registers again. The request asks for
   ``application_type`` ``native``, the authorization code and refresh token
   grants, and ``none`` as token endpoint authentication when the server
   lists it (else the first of basic/post it lists).
4. Otherwise :class:`RegistrationError`, which says which options to pass.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from host_receiver.auth._discovery import ServerMetadata, json_object, read_limited
from host_receiver.auth._flow import ClientIdentity
from host_receiver.auth._quote import quote, safe_url
from host_receiver.auth._store import RegisteredClient
from host_receiver.auth._urls import require_secure
from host_receiver.errors import AuthError, RegistrationError
from host_receiver.sanitize import safe_logger

__all__ = ["PreRegisteredClient", "check_metadata_url", "identify", "register"]

logger = safe_logger("host_receiver.auth")


@dataclass(frozen=True)
class PreRegisteredClient:
    """A client registered with the authorization server beforehand (by a person or an admin)."""

    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    private_key_pem: str | None = field(default=None, repr=False)
    issuer: str | None = None  # the authorization server it belongs to, when known

    def identity(self) -> ClientIdentity:
        return ClientIdentity(self.client_id, self.client_secret, self.private_key_pem, kind="pre-registered")


def check_metadata_url(url: str) -> str:
    """``url`` if it can be a Client ID Metadata Document URL (https, with a path)."""
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname or parts.path in ("", "/") or parts.fragment:
        raise AuthError(
            f"a client metadata document URL must be https with a path, like "
            f"https://example.com/client.json (got {safe_url(url)})"
        )
    return url


async def identify(
    http: httpx.AsyncClient,
    server: ServerMetadata,
    *,
    redirect_uri: str,
    pre_registered: PreRegisteredClient | None,
    metadata_url: str | None,
    stored: RegisteredClient | None,
    client_name: str,
) -> tuple[ClientIdentity, RegisteredClient | None]:
    """The identity to use, and a new registration to keep (None when nothing new was registered)."""
    if pre_registered is not None:
        if (
            pre_registered.issuer is not None
            and server.issuer is not None
            and pre_registered.issuer != server.issuer
        ):
            raise RegistrationError(
                f"the client {quote(pre_registered.client_id)} was registered with "
                f"{quote(pre_registered.issuer)}, but the server now uses {quote(server.issuer)}"
            )
        return pre_registered.identity(), None
    if metadata_url is not None and server.flag("client_id_metadata_document_supported"):
        return ClientIdentity(metadata_url, auth_method="none", kind="metadata-document"), None
    if stored is not None and stored.usable(redirect_uri):
        logger.info("reusing the client registered earlier (%s)", quote(stored.client_id))
        return _identity(stored), None
    if server.url("registration_endpoint") is not None:
        registered = await register(http, server, redirect_uri=redirect_uri, client_name=client_name)
        return _identity(registered), registered
    raise RegistrationError(
        f"the authorization server {quote(server.issuer or '')} supports neither client ID metadata "
        "documents (or none was given) nor dynamic client registration: pass a pre-registered "
        "client with --auth-client-id, or a metadata document URL with --auth-client-metadata-url"
    )


def _identity(client: RegisteredClient) -> ClientIdentity:
    return ClientIdentity(
        client.client_id,
        client.client_secret,
        auth_method=client.token_endpoint_auth_method,
        kind="registered",
    )


def _requested_auth_method(server: ServerMetadata) -> str:
    supported = server.strings("token_endpoint_auth_methods_supported")
    if supported is None or "none" in supported:
        return "none"
    for method in ("client_secret_basic", "client_secret_post"):
        if method in supported:
            return method
    return "none"


async def register(
    http: httpx.AsyncClient, server: ServerMetadata, *, redirect_uri: str, client_name: str
) -> RegisteredClient:
    """Register a native client for ``redirect_uri`` (RFC 7591)."""
    endpoint = server.url("registration_endpoint")
    assert endpoint is not None
    require_secure(endpoint, "registration endpoint")
    request: dict[str, Any] = {
        "client_name": client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": _requested_auth_method(server),
        "application_type": "native",
    }
    try:
        async with http.stream(
            "POST", endpoint, json=request, headers={"accept": "application/json"}
        ) as response:
            raw = await read_limited(response, 64 * 1024)
            status = response.status_code
    except httpx.HTTPError as exc:
        raise RegistrationError(
            f"client registration at {safe_url(endpoint)} failed ({type(exc).__name__})"
        ) from None
    data = json_object(raw)
    if status not in (200, 201) or not isinstance(data, dict) or not isinstance(data.get("client_id"), str):
        detail = ""
        if isinstance(data, dict) and data.get("error"):
            detail = f": {quote(data['error'], 60)}"
            if data.get("error_description"):
                detail += f" ({quote(data['error_description'])})"
        raise RegistrationError(
            f"client registration at {safe_url(endpoint)} was refused (HTTP {status}){detail}"
        )
    expires = data.get("client_secret_expires_at")
    method = data.get("token_endpoint_auth_method")
    registered = RegisteredClient(
        client_id=data["client_id"],
        client_secret=data["client_secret"] if isinstance(data.get("client_secret"), str) else None,
        secret_expires_at=float(expires) if isinstance(expires, int | float) and expires > 0 else None,
        token_endpoint_auth_method=method
        if isinstance(method, str)
        else request["token_endpoint_auth_method"],
        redirect_uris=(redirect_uri,),
    )
    logger.info(
        "registered client %s at %s (token endpoint authentication %s)",
        quote(registered.client_id),
        safe_url(endpoint),
        registered.token_endpoint_auth_method,
    )
    if registered.secret_expires_at is not None and registered.secret_expires_at <= time.time():
        raise RegistrationError(
            "the authorization server registered a client whose secret has already expired"
        )
    return registered
