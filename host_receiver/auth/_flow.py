"""The grants: authorization code with PKCE, refresh, client credentials, the enterprise grant and
workload identity.

(About 610 lines, one idea: every grant ends in the same token request, client
authentication, DPoP proof and response checks; apart they would repeat them.)

The OAuth mechanics (PKCE verifier and S256 challenge, ``state``, the
authorization URL, token request bodies, client authentication including
``private_key_jwt`` signing) are authlib's; this module decides what to
send where and checks what comes back. authlib and its JOSE library are
imported when a grant runs, not before.

Rules:

- Authorization code: the server must list ``S256`` in
  ``code_challenge_methods_supported`` (absent or without ``S256``: refused;
  only a 2025-03-26 server without any metadata is exempt). The
  authorization request carries ``response_type=code``, ``client_id``,
  ``redirect_uri``, ``state``, the S256 ``code_challenge``, ``resource`` and
  the scope when there is one. The response is checked in this order before
  the code goes anywhere: ``iss`` (RFC 9207, MCP 2026-07-28 table: a present
  ``iss`` must equal the recorded issuer exactly; an absent one is refused
  only when the metadata sets ``authorization_response_iss_parameter_supported``;
  on a mismatch nothing else in the response is acted on or shown), then
  ``state`` (constant-time comparison), then ``error``, then ``code``.
- Every token request carries ``resource``; the authorization code request
  also ``redirect_uri`` and ``code_verifier``.
- Client authentication at the token endpoint follows the metadata's
  ``token_endpoint_auth_methods_supported`` (absent: RFC 8414's default,
  ``client_secret_basic``): a private key means ``private_key_jwt`` (an
  assertion whose ``aud`` is the issuer, signed with an algorithm the server
  lists in ``token_endpoint_auth_signing_alg_values_supported`` that fits
  the key); a secret means what registration settled, else
  ``client_secret_basic``, else ``client_secret_post``; no secret means
  ``none``. A server that accepts none of what we hold is refused.
  ``client_secret_basic`` form-encodes id and secret first (RFC 6749 2.3.1).
- Client credentials: ``grant_type=client_credentials`` with scope and
  resource. Enterprise-managed (SEP-990): an RFC 8693 token exchange at the
  identity provider (``subject_token`` = the ID token, ``requested_token_type``
  = ID-JAG, ``audience`` = the issuer, ``resource``, scope), whose answer must
  be of ``issued_token_type`` ID-JAG; then an RFC 7523 JWT bearer grant at the
  authorization server with that assertion.
- A token response must be a JSON object with an ``access_token`` of type
  Bearer (case-insensitive; absent counts as Bearer). Error answers become
  :class:`TokenRequestError` naming the server's ``error`` code; the
  server's text is escaped and any secret the request carried is masked in
  it (secret parameters, client assertion, Authorization credentials).

Fixed caps (docs/limits.md): ``_MAX_ANSWER``.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote_plus

import httpx

from host_receiver.auth._browser import RedirectTarget
from host_receiver.auth._discovery import ServerMetadata, json_object, read_limited
from host_receiver.auth._dpop import DPoPKey
from host_receiver.auth._quote import quote, safe_url
from host_receiver.auth._store import TokenSet
from host_receiver.auth._urls import require_secure
from host_receiver.errors import AuthError, AuthorizationDenied, TokenRequestError
from host_receiver.sanitize import safe_logger

__all__ = [
    "ID_JAG",
    "JWT_BEARER",
    "TOKEN_EXCHANGE",
    "ClientIdentity",
    "EnterpriseIdp",
    "authorization_code",
    "client_credentials",
    "code_grant_endpoints",
    "enterprise_grant",
    "refresh",
    "workload_identity",
]

logger = safe_logger("host_receiver.auth")

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
_MAX_ANSWER = 64 * 1024
_FORM = "application/x-www-form-urlencoded"
_SECRET_METHODS = ("client_secret_basic", "client_secret_post")
#: Request parameters whose values must never show up, even echoed back in a server's error text.
_SECRET_PARAMS = frozenset(
    {
        "code",
        "code_verifier",
        "refresh_token",
        "assertion",
        "subject_token",
        "client_secret",
        "client_assertion",
    }
)


@dataclass(frozen=True)
class ClientIdentity:
    """Who the client is at one authorization server, and what it authenticates with."""

    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    private_key_pem: str | None = field(default=None, repr=False)
    auth_method: str | None = None  # what registration settled
    kind: str = "pre-registered"  # or "metadata-document", "registered"

    def secrets(self) -> list[str]:
        return [s for s in (self.client_secret, self.private_key_pem) if s]


@dataclass(frozen=True)
class EnterpriseIdp:
    """The enterprise identity provider of the SEP-990 grant, and the user's ID token from it."""

    id_token: str = field(repr=False)
    token_endpoint: str
    client_id: str


# --- client authentication ------------------------------------------------------------------


def _key_algorithms(pem: str) -> tuple[Any, tuple[str, ...]]:
    """The joserfc key for ``pem`` and the JWS algorithms it can sign with, preferred first."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
    from joserfc.jwk import ECKey, OKPKey, RSAKey

    try:
        loaded = serialization.load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError):
        raise AuthError("the client key is not an unencrypted PEM private key") from None
    if isinstance(loaded, ec.EllipticCurvePrivateKey):
        alg = {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}.get(loaded.curve.name)
        if alg is None:
            raise AuthError(f"the client key's curve {loaded.curve.name} has no JWS algorithm")
        return ECKey.import_key(pem), (alg,)
    if isinstance(loaded, rsa.RSAPrivateKey):
        return RSAKey.import_key(pem), ("RS256", "PS256", "RS384", "RS512")
    if isinstance(loaded, ed25519.Ed25519PrivateKey):
        return OKPKey.import_key(pem), ("EdDSA", "Ed25519")
    raise AuthError("the client key must be an EC, RSA or Ed25519 private key")


def choose_auth_method(client: ClientIdentity, server: ServerMetadata) -> str:
    """How ``client`` authenticates at the token endpoint (see the module rules)."""
    supported = server.strings("token_endpoint_auth_methods_supported")
    listed = ("client_secret_basic",) if supported is None else supported
    if client.private_key_pem:
        if supported is not None and "private_key_jwt" not in supported:
            raise AuthError(
                "the authorization server does not accept private_key_jwt client authentication "
                f"(it accepts: {', '.join(map(quote, supported)) or 'nothing listed'})"
            )
        return "private_key_jwt"
    settled = client.auth_method
    if (
        settled is not None
        and (supported is None or settled in supported)
        and (settled == "none" or (settled in _SECRET_METHODS and client.client_secret))
    ):
        return settled
    if client.client_secret:
        for method in _SECRET_METHODS:
            if method in listed:
                return method
        raise AuthError(
            "the authorization server accepts neither client_secret_basic nor client_secret_post "
            f"(it accepts: {', '.join(map(quote, listed)) or 'nothing listed'})"
        )
    if supported is not None and "none" not in supported:
        raise AuthError(
            "the authorization server does not accept public clients (token_endpoint_auth_method "
            f"'none'); it accepts: {', '.join(map(quote, supported))}. Pass a client secret or key"
        )
    return "none"


def _authenticate(
    client: ClientIdentity, method: str, server: ServerMetadata, endpoint: str, body: str
) -> tuple[dict[str, str], str]:
    """Headers and body of a token request, with ``client``'s authentication added (authlib)."""
    from authlib.oauth2.auth import ClientAuth

    headers = {"Accept": "application/json", "Content-Type": _FORM}
    if method == "private_key_jwt":
        from authlib.oauth2.rfc7523 import PrivateKeyJWT

        assert client.private_key_pem is not None
        key, algorithms = _key_algorithms(client.private_key_pem)
        allowed = server.strings("token_endpoint_auth_signing_alg_values_supported")
        usable = [alg for alg in algorithms if allowed is None or alg in allowed]
        if not usable:
            raise AuthError(
                "the authorization server accepts none of the signing algorithms the client key "
                f"allows ({', '.join(algorithms)})"
            )
        audience = server.issuer or endpoint
        auth = ClientAuth(client.client_id, key, PrivateKeyJWT(audience, alg=usable[0]))
    elif method == "client_secret_basic":
        auth = ClientAuth(quote_plus(client.client_id), quote_plus(client.client_secret or ""), method)
    else:
        auth = ClientAuth(client.client_id, client.client_secret, method)
    _uri, headers, body = auth.prepare("POST", endpoint, headers, body)
    return dict(headers), str(body)


# --- token requests -------------------------------------------------------------------------


def _form(grant_type: str, params: Mapping[str, str | Sequence[str] | None]) -> str:
    from authlib.oauth2.rfc6749.parameters import prepare_token_request

    values = {k: (" ".join(v) if isinstance(v, tuple | list) else v) for k, v in params.items() if v}
    return str(prepare_token_request(grant_type, **values))


def _mask(text: str, hidden: Sequence[str]) -> str:
    for secret in sorted((s for s in hidden if s), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def _sent_secrets(headers: Mapping[str, str], body: str) -> list[str]:
    """The secrets a token request carries: its secret parameters and its Authorization credentials."""
    values = [value for name, value in parse_qsl(body) if name in _SECRET_PARAMS]
    credentials = headers.get("Authorization", "").partition(" ")[2].strip()
    return [*values, credentials] if credentials else values


async def _post_token(
    http: httpx.AsyncClient,
    endpoint: str,
    headers: Mapping[str, str],
    body: str,
    *,
    what: str,
    hidden: Sequence[str],
    dpop: DPoPKey | None = None,
) -> dict[str, Any]:
    """POST a token request, with a DPoP proof when ``dpop`` is given; its JSON answer (an error
    answer raises).

    In an error answer, ``hidden`` and every secret the request carried are masked.
    """
    hidden = [*hidden, *_sent_secrets(headers, body)]
    nonce: str | None = None
    while True:
        sent = dict(headers)
        if dpop is not None:
            sent["DPoP"] = dpop.proof("POST", endpoint, nonce=nonce)
        try:
            async with http.stream("POST", endpoint, headers=sent, content=body.encode()) as response:
                raw = await read_limited(response, _MAX_ANSWER)
                status, fresh = response.status_code, response.headers.get("dpop-nonce")
        except httpx.HTTPError as exc:
            raise TokenRequestError(
                f"the {what} to {safe_url(endpoint)} failed ({type(exc).__name__})"
            ) from None
        data = json_object(raw)
        if not isinstance(data, dict):
            raise TokenRequestError(
                f"the {what} to {safe_url(endpoint)} got HTTP {status} without a JSON object"
            )
        if dpop is None or data.get("error") != "use_dpop_nonce" or not fresh or fresh == nonce:
            break
        nonce = fresh  # RFC 9449 section 8: once more, with the server's nonce
    if status != 200 or "error" in data:
        code = _mask(str(data["error"]), hidden) if data.get("error") is not None else None
        code_text = quote(code, 60) if code is not None else f"HTTP {status}"
        detail = data.get("error_description")
        detail_text = f" ({quote(_mask(str(detail), hidden))})" if detail else ""
        raise TokenRequestError(
            f"the authorization server at {safe_url(endpoint)} refused the {what}: {code_text}{detail_text}",
            error=code,
        )
    return data


def _token_set(
    data: Mapping[str, Any],
    endpoint: str,
    requested: Sequence[str],
    previous_refresh: str | None,
    dpop: DPoPKey | None,
) -> TokenSet:
    access = data.get("access_token")
    if not isinstance(access, str) or not access:
        raise TokenRequestError(f"the token endpoint {safe_url(endpoint)} sent no access_token")
    token_type = data.get("token_type") or "Bearer"
    kinds = ("bearer", "dpop") if dpop is not None else ("bearer",)
    if not isinstance(token_type, str) or token_type.lower() not in kinds:
        raise TokenRequestError(
            f"the token endpoint {safe_url(endpoint)} issued a token of type {quote(token_type, 40)}; "
            f"only {' and '.join(kind.capitalize() if kind == 'bearer' else 'DPoP' for kind in kinds)} "
            "tokens are taken here"
        )
    bound = token_type.lower() == "dpop"
    expires_in = data.get("expires_in")
    expires_at = None
    if isinstance(expires_in, int | float) and not isinstance(expires_in, bool) and expires_in > 0:
        expires_at = time.time() + float(expires_in)
    refresh_token = data.get("refresh_token")
    scope = data.get("scope")
    granted = tuple(scope.split()) if isinstance(scope, str) and scope.strip() else tuple(requested)
    return TokenSet(
        access_token=access,
        token_type="DPoP" if bound else "Bearer",
        dpop_key=dpop.private_jwk() if bound and dpop is not None else None,
        expires_at=expires_at,
        refresh_token=refresh_token if isinstance(refresh_token, str) and refresh_token else previous_refresh,
        scope=granted,
        requested_scope=tuple(requested),
    )


async def token_grant(
    http: httpx.AsyncClient,
    server: ServerMetadata,
    client: ClientIdentity | None,
    grant_type: str,
    params: Mapping[str, str | Sequence[str] | None],
    *,
    what: str,
    requested: Sequence[str],
    previous_refresh: str | None = None,
    dpop: DPoPKey | None = None,
) -> TokenSet:
    """One token request at ``server``'s token endpoint, authenticated as ``client`` (None: no client),
    for a token bound to ``dpop`` when given."""
    endpoint = server.url("token_endpoint")
    if endpoint is None:
        raise AuthError("the authorization server metadata has no token_endpoint")
    require_secure(endpoint, "token endpoint")
    if client is None:
        method = "none, no client id"
        headers, body = {"Accept": "application/json", "Content-Type": _FORM}, _form(grant_type, params)
    else:
        method = choose_auth_method(client, server)
        headers, body = _authenticate(client, method, server, endpoint, _form(grant_type, params))
    hidden = client.secrets() if client is not None else []
    data = await _post_token(http, endpoint, headers, body, what=what, hidden=hidden, dpop=dpop)
    tokens = _token_set(data, endpoint, requested, previous_refresh, dpop)
    logger.info(
        "%s at %s succeeded (client authentication %s)%s",
        what,
        safe_url(endpoint),
        method,
        ""
        if tokens.expires_at is None
        else f"; the token is valid for {int(tokens.expires_at - time.time())} s",
    )
    return tokens


# --- authorization code ----------------------------------------------------------------------


def require_pkce(server: ServerMetadata) -> None:
    """Refuse an authorization server that does not support PKCE with S256."""
    if server.location is None:  # 2025-03-26 defaults: no metadata to ask
        return
    methods = server.strings("code_challenge_methods_supported")
    if methods is None:
        raise AuthError(
            f"the authorization server {quote(server.issuer or '')} does not advertise PKCE "
            "(no code_challenge_methods_supported); refusing to authorize"
        )
    if "S256" not in methods:
        raise AuthError(
            f"the authorization server {quote(server.issuer or '')} does not support the S256 PKCE "
            f"method (it lists: {', '.join(map(quote, methods)) or 'nothing'}); refusing to authorize"
        )


def check_authorization_response(params: Mapping[str, str], *, state: str, server: ServerMetadata) -> str:
    """The authorization code from a redirect's parameters, once ``iss`` and ``state`` check out."""
    iss = params.get("iss")
    if iss is not None:
        if server.issuer is not None and iss != server.issuer:
            raise AuthorizationDenied(
                f"the authorization response names issuer {quote(iss)}, not {quote(server.issuer)} "
                "(a mix-up attack?); it was ignored"
            )
    elif server.flag("authorization_response_iss_parameter_supported"):
        raise AuthorizationDenied(
            "the authorization response has no iss parameter although the authorization server "
            "advertises it (RFC 9207); it was ignored"
        )
    received = params.get("state")
    if received is None or not secrets.compare_digest(received.encode(), state.encode()):
        raise AuthorizationDenied(
            "the authorization response's state does not match the request; it was ignored"
        )
    error = params.get("error")
    if error is not None:
        detail = params.get("error_description")
        raise AuthorizationDenied(
            f"the authorization server refused: {quote(error, 60)}"
            + (f" ({quote(detail)})" if detail else "")
        )
    code = params.get("code")
    if not code:
        raise AuthorizationDenied("the authorization response holds no code")
    return code


def code_grant_endpoints(server: ServerMetadata) -> tuple[str, str]:
    """The authorization and token endpoints, once they and PKCE support check out."""
    endpoint = server.url("authorization_endpoint")
    token_endpoint = server.url("token_endpoint")
    if endpoint is None or token_endpoint is None:
        raise AuthError("the authorization server metadata lacks an authorization_endpoint or token_endpoint")
    require_secure(endpoint, "authorization endpoint")
    require_secure(token_endpoint, "token endpoint")
    require_pkce(server)
    return endpoint, token_endpoint


async def authorization_code(
    http: httpx.AsyncClient,
    server: ServerMetadata,
    client: ClientIdentity,
    target: RedirectTarget,
    *,
    redirect_uri: str,
    resource: str,
    scopes: Sequence[str],
    dpop: DPoPKey | None = None,
) -> TokenSet:
    """Authorize through ``target`` (the browser step) and redeem the code."""
    from authlib.common.security import generate_token
    from authlib.oauth2.client import OAuth2Client

    endpoint, _token_endpoint = code_grant_endpoints(server)
    verifier = generate_token(64)
    oauth = OAuth2Client(
        None, client_id=client.client_id, redirect_uri=redirect_uri, code_challenge_method="S256"
    )
    url, state = oauth.create_authorization_url(
        endpoint, code_verifier=verifier, resource=resource, scope=" ".join(scopes) or None
    )
    logger.info(
        "authorizing at %s as %s client %s%s",
        safe_url(endpoint),
        client.kind,
        quote(client.client_id),
        f" for scope {quote(' '.join(scopes))}" if scopes else " (no scope)",
    )
    params = await target.authorize(str(url))
    code = check_authorization_response(params, state=str(state), server=server)
    return await token_grant(
        http,
        server,
        client,
        "authorization_code",
        {"code": code, "redirect_uri": redirect_uri, "code_verifier": verifier, "resource": resource},
        what="authorization code exchange",
        requested=scopes,
        dpop=dpop,
    )


async def refresh(
    http: httpx.AsyncClient,
    server: ServerMetadata,
    client: ClientIdentity,
    tokens: TokenSet,
    *,
    resource: str,
    dpop: DPoPKey | None = None,
) -> TokenSet:
    """A new access token from ``tokens.refresh_token`` (the refresh token kept when none is sent back)."""
    assert tokens.refresh_token is not None
    return await token_grant(
        http,
        server,
        client,
        "refresh_token",
        {"refresh_token": tokens.refresh_token, "resource": resource},
        what="token refresh",
        requested=tokens.requested_scope,
        previous_refresh=tokens.refresh_token,
        dpop=dpop,
    )


# --- machine to machine --------------------------------------------------------------------


def _require_grant(server: ServerMetadata, grant_type: str) -> None:
    supported = server.strings("grant_types_supported")
    if supported is not None and grant_type not in supported:
        raise AuthError(
            f"the authorization server does not offer the {grant_type} grant "
            f"(it offers: {', '.join(map(quote, supported)) or 'nothing listed'})"
        )


async def client_credentials(
    http: httpx.AsyncClient,
    server: ServerMetadata,
    client: ClientIdentity,
    *,
    resource: str,
    scopes: Sequence[str],
    dpop: DPoPKey | None = None,
) -> TokenSet:
    _require_grant(server, "client_credentials")
    return await token_grant(
        http,
        server,
        client,
        "client_credentials",
        {"scope": tuple(scopes), "resource": resource},
        what="client credentials grant",
        requested=scopes,
        dpop=dpop,
    )


async def enterprise_grant(
    http: httpx.AsyncClient,
    server: ServerMetadata,
    client: ClientIdentity,
    idp: EnterpriseIdp,
    *,
    resource: str,
    scopes: Sequence[str],
    dpop: DPoPKey | None = None,
) -> TokenSet:
    """SEP-990: ID token -> ID-JAG at the identity provider -> access token at the authorization server."""
    from authlib.oauth2.auth import ClientAuth

    if server.issuer is None:
        raise AuthError("the enterprise-managed grant needs the authorization server's metadata (its issuer)")
    _require_grant(server, JWT_BEARER)
    endpoint = require_secure(idp.token_endpoint, "identity provider token endpoint")
    body = _form(
        TOKEN_EXCHANGE,
        {
            "requested_token_type": ID_JAG,
            "audience": server.issuer,
            "resource": resource,
            "scope": tuple(scopes),
            "subject_token": idp.id_token,
            "subject_token_type": ID_TOKEN,
        },
    )
    headers = {"Accept": "application/json", "Content-Type": _FORM}
    _uri, headers, body = ClientAuth(idp.client_id, None, "none").prepare("POST", endpoint, headers, body)
    data = await _post_token(http, endpoint, headers, body, what="token exchange", hidden=[idp.id_token])
    grant = data.get("access_token")
    if data.get("issued_token_type") != ID_JAG or not isinstance(grant, str) or not grant:
        raise TokenRequestError(
            f"the identity provider at {safe_url(endpoint)} did not issue an ID-JAG "
            f"(issued_token_type {quote(data.get('issued_token_type'), 80)})"
        )
    logger.info("the identity provider at %s issued an ID-JAG", safe_url(endpoint))
    return await token_grant(
        http,
        server,
        client,
        JWT_BEARER,
        {"assertion": grant, "scope": tuple(scopes), "resource": resource},
        what="JWT bearer grant",
        requested=scopes,
        dpop=dpop,
    )


async def workload_identity(
    http: httpx.AsyncClient,
    server: ServerMetadata,
    client: ClientIdentity | None,
    assertion: str,
    *,
    resource: str,
    scopes: Sequence[str],
    dpop: DPoPKey | None = None,
) -> TokenSet:
    """SEP-1933: the JWT a workload's platform issued it, as an RFC 7523 authorization grant.

    No client registration is needed: without a pre-registered client the
    request carries no client id. A refusal is final (no retry, no other grant).
    """
    _require_grant(server, JWT_BEARER)
    return await token_grant(
        http,
        server,
        client,
        JWT_BEARER,
        {"assertion": assertion, "scope": tuple(scopes), "resource": resource},
        what="workload identity (JWT bearer) grant",
        requested=scopes,
        dpop=dpop,
    )
