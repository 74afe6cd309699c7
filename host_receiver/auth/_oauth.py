"""``OAuth``: an ``httpx.Auth`` that authorizes requests to MCP servers by itself.

(About 430 lines, one idea: the request's side of authorization, from the
token it carries to the flow a refusal starts; the grants are in ``_flow``.)

Rules:

- Each request to a server for which a token is known (from this run or
  the store) carries ``Authorization: Bearer`` with it, unless that token
  has expired (30 s leeway); a DPoP-bound token goes as ``Authorization:
  DPoP`` with a fresh proof in ``DPoP`` (:mod:`._dpop`, which says when
  DPoP is used and how its nonces are answered). Tokens are kept per server (the canonical URI
  of the request URL) and issuer.
- A 401, or a 403 whose Bearer challenge says ``insufficient_scope``, starts
  the flow, then the request is sent again with the new token. Other
  answers, a 403 included, pass through untouched.
- The flow: discovery (:mod:`._discovery`), every time, so that a server
  that moved to another authorization server is followed (the new issuer has
  its own stored entry and registration); on a 401 with a refresh token
  kept for that server and issuer, a refresh first, falling back to a new
  grant only when the refresh is refused; otherwise the configured grant
  (authorization code by default, with the scope rules of :mod:`._scopes`;
  a 403 steps up with the union of scopes). What it obtains (tokens,
  registered client) is saved in the store at once.
- One request obtains at most ``max_authorizations`` (3) new tokens; when
  the server still refuses, the request fails with :class:`InsufficientScope`
  (403) or :class:`AuthError` (401).
- Flows for one server run one at a time (a lock); a request that waited
  uses the token the flow before it obtained, and fails with that flow's
  error when it failed, instead of starting another browser round.
- Only ``httpx.AsyncClient`` is supported. The flow's own HTTP traffic
  (metadata, registration, token requests) goes through a client of its own
  that follows no redirect on POSTs; nothing of it carries the MCP token.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator
from dataclasses import dataclass, field, replace
from pathlib import Path

import anyio
import httpx

from host_receiver._net.body import MAX_ERROR_BODY, cap_unread_body
from host_receiver.auth._browser import Browser, SystemBrowser
from host_receiver.auth._challenge import BearerChallenge, asks_for_dpop_nonce, parse_bearer_challenge
from host_receiver.auth._discovery import Discovery, discover
from host_receiver.auth._dpop import DPoPKey, use_dpop
from host_receiver.auth._flow import (
    ClientIdentity,
    EnterpriseIdp,
    authorization_code,
    client_credentials,
    code_grant_endpoints,
    enterprise_grant,
    refresh,
    workload_identity,
)
from host_receiver.auth._quote import quote, safe_url
from host_receiver.auth._registration import PreRegisteredClient, check_metadata_url, identify
from host_receiver.auth._scopes import select_scopes
from host_receiver.auth._store import StoredAuthorization, TokenSet, TokenStore, default_token_store
from host_receiver.auth._urls import canonical_resource, origin, require_loopback_redirect
from host_receiver.errors import AuthError, InsufficientScope, TokenRequestError
from host_receiver.sanitize import safe_logger

__all__ = [
    "AuthorizationCodeGrant",
    "ClientCredentialsGrant",
    "EnterpriseGrant",
    "Grant",
    "OAuth",
    "WorkloadIdentityGrant",
]

logger = safe_logger("host_receiver.auth")

#: New tokens one request may obtain before it fails (MCP: "no more than a few times").
MAX_AUTHORIZATIONS = 3


@dataclass(frozen=True)
class AuthorizationCodeGrant:
    """A person authorizes in a browser (the default)."""

    browser: Browser | None = None  # None: the system browser


@dataclass(frozen=True)
class ClientCredentialsGrant:
    """The client acts for itself (needs a pre-registered client with a secret or a key)."""


@dataclass(frozen=True)
class EnterpriseGrant:
    """SEP-990 enterprise-managed authorization (needs a pre-registered client)."""

    idp: EnterpriseIdp = field(repr=False)


@dataclass(frozen=True)
class WorkloadIdentityGrant:
    """SEP-1933 workload identity: a JWT the workload's platform issued it (RFC 7523 JWT bearer grant).

    ``assertion`` is the JWT; ``assertion_file`` a file holding it, read again for
    every token request (platforms rotate it). No client registration is needed; a
    pre-registered client's id goes along when given.
    """

    assertion: str | None = field(default=None, repr=False)
    assertion_file: Path | None = None

    def __post_init__(self) -> None:
        if (self.assertion is None) == (self.assertion_file is None):
            raise AuthError(
                "the workload identity grant takes an assertion or an assertion file, one of them"
            )

    def read(self) -> str:
        """The assertion, as it is now."""
        if self.assertion is not None:
            return self.assertion
        assert self.assertion_file is not None
        try:
            text = self.assertion_file.read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise AuthError(
                f"cannot read the assertion file {self.assertion_file}: {type(exc).__name__}"
            ) from None
        if not text:
            raise AuthError(f"the assertion file {self.assertion_file} is empty")
        return text


Grant = AuthorizationCodeGrant | ClientCredentialsGrant | EnterpriseGrant | WorkloadIdentityGrant


@dataclass
class _Server:
    """What one OAuth instance knows about one MCP server."""

    url: str
    tokens: TokenSet | None = None
    issuer: str | None = None
    loaded: bool = False
    attempts: int = 0
    failure: AuthError | None = None
    lock: anyio.Lock | None = None
    dpop_nonce: str | None = None  # the last DPoP-Nonce the server sent
    dpop_key: tuple[str, DPoPKey] | None = None  # the key of ``tokens``, loaded once


class OAuth(httpx.Auth):
    """MCP authorization for ``httpx.AsyncClient`` (``HttpTransport(url, auth=OAuth())``).

    ``server_url`` is only needed when the request URLs are not the MCP
    endpoint itself; by default each request URL is its own server.
    """

    requires_request_body = True
    #: It changes a request only by its Authorization (and DPoP) header, and only once it holds a
    #: token or was challenged: the transport may skip the client while neither happened.
    challenge_driven = True

    def __init__(
        self,
        server_url: str | None = None,
        *,
        grant: Grant | None = None,
        client: PreRegisteredClient | None = None,
        client_metadata_url: str | None = None,
        store: TokenStore | None = None,
        client_name: str = "host-receiver",
        max_authorizations: int = MAX_AUTHORIZATIONS,
        timeout: float = 30.0,
        dpop: bool | None = None,
    ) -> None:
        self.server_url = canonical_resource(server_url) if server_url is not None else None
        self.grant: Grant = grant if grant is not None else AuthorizationCodeGrant()
        self.client = client
        self.client_metadata_url = check_metadata_url(client_metadata_url) if client_metadata_url else None
        if isinstance(self.grant, ClientCredentialsGrant | EnterpriseGrant) and client is None:
            raise AuthError("client credentials and the enterprise grant need a pre-registered client id")
        self._store = store
        self.client_name = client_name
        self.max_authorizations = max_authorizations
        self.timeout = timeout
        self.dpop = dpop
        self._servers: dict[str, _Server] = {}

    def __repr__(self) -> str:
        return f"OAuth({type(self.grant).__name__}, store={self._store!r})"

    # --- httpx.Auth ---------------------------------------------------------------------

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        raise AuthError("host_receiver.auth.OAuth works with httpx.AsyncClient only")

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        if self.requires_request_body:
            await request.aread()
        server = self._server_for(request.url)
        await self._load(server)
        used = server.tokens
        if used is not None and not used.expired():
            self._present(request, server, used)
        else:
            used = None
        response = yield request
        obtained = 0
        nonce_tried = False
        while True:
            challenges = response.headers.get_list("www-authenticate")
            fresh_nonce = response.headers.get("dpop-nonce")
            if fresh_nonce:
                server.dpop_nonce = fresh_nonce
            if (
                used is not None
                and used.dpop_key
                and response.status_code == 401
                and fresh_nonce
                and not nonce_tried
                and asks_for_dpop_nonce(challenges)
            ):  # RFC 9449 section 9: once more with the server's nonce; no new token
                nonce_tried = True
                cap_unread_body(response, MAX_ERROR_BODY)
                self._present(request, server, used)
                response = yield request
                continue
            challenge = parse_bearer_challenge(challenges)
            step_up = response.status_code == 403 and challenge is not None and challenge.insufficient_scope
            if response.status_code != 401 and not step_up:
                return
            if obtained >= self.max_authorizations:
                if step_up:
                    raise InsufficientScope(
                        f"{safe_url(str(request.url))} still answers 403 insufficient_scope after "
                        f"{obtained} authorizations (scope asked: "
                        f"{quote(' '.join(challenge.scope) if challenge else '') or 'none'}); giving up"
                    )
                raise AuthError(
                    f"{safe_url(str(request.url))} still answers 401 after {obtained} new tokens; giving up"
                )
            cap_unread_body(response, MAX_ERROR_BODY)  # httpx reads it before the retry
            used = await self._obtain(server, challenge, step_up=step_up, used=used)
            obtained += 1
            self._present(request, server, used)
            response = yield request

    def _present(self, request: httpx.Request, server: _Server, tokens: TokenSet) -> None:
        """Put ``tokens`` on ``request``: Bearer, or DPoP with a fresh proof (module rules)."""
        if not tokens.dpop_key:
            request.headers["Authorization"] = f"Bearer {tokens.access_token}"
            return
        if server.dpop_key is None or server.dpop_key[0] != tokens.dpop_key:
            server.dpop_key = (tokens.dpop_key, DPoPKey(tokens.dpop_key))
        proof = server.dpop_key[1].proof(
            request.method, str(request.url), access_token=tokens.access_token, nonce=server.dpop_nonce
        )
        request.headers["Authorization"] = f"DPoP {tokens.access_token}"
        request.headers["DPoP"] = proof

    # --- state ------------------------------------------------------------------------------

    def _server_for(self, url: httpx.URL) -> _Server:
        key = self.server_url or canonical_resource(str(url.copy_with(query=None, fragment=None)))
        server = self._servers.get(key)
        if server is None:
            server = self._servers[key] = _Server(key)
        return server

    async def store(self) -> TokenStore:
        """The token store (the default one is made on first use)."""
        if self._store is None:
            self._store = await default_token_store()
        return self._store

    async def _load(self, server: _Server) -> None:
        if server.loaded:
            return
        server.loaded = True
        for entry in await (await self.store()).load(server.url):
            if entry.tokens is not None:
                server.tokens, server.issuer = entry.tokens, entry.issuer
                logger.info(
                    "using the stored authorization for %s (issuer %s)", server.url, quote(entry.issuer)
                )
                return

    # --- the flow -------------------------------------------------------------------------

    async def _obtain(
        self, server: _Server, challenge: BearerChallenge | None, *, step_up: bool, used: TokenSet | None
    ) -> TokenSet:
        if server.lock is None:
            server.lock = anyio.Lock()
        seen = server.attempts
        async with server.lock:
            current = server.tokens
            if current is not None and current is not used and not current.expired():
                return current  # another request's flow got it while this one waited
            if server.attempts != seen and server.failure is not None:
                raise type(server.failure)(str(server.failure))
            server.attempts += 1
            try:
                tokens = await self._run(server, challenge, step_up=step_up)
            except AuthError as exc:
                server.failure = exc
                raise
            server.failure = None
            server.tokens = tokens
            return tokens

    async def _run(self, server: _Server, challenge: BearerChallenge | None, *, step_up: bool) -> TokenSet:
        store = await self.store()
        async with httpx.AsyncClient(timeout=self.timeout, follow_redirects=False) as http:
            # Discovered afresh each time: the server may have moved to another authorization server.
            discovery = await discover(http, server.url, challenge)
            issuer = discovery.server.issuer or origin(server.url)
            entries = {e.issuer: e for e in await store.load(server.url)}
            entry = entries.get(issuer) or StoredAuthorization(server.url, issuer)
            if server.issuer is not None and server.issuer != issuer:
                logger.info("%s now uses authorization server %s", server.url, quote(issuer))
            # Tokens of another authorization server never go to this one (not even to refresh).
            previous = entry.tokens or (server.tokens if server.issuer == issuer else None)
            server.issuer = issuer
            if not step_up and previous is not None and previous.refresh_token:
                refreshed = await self._refresh(http, discovery, entry, previous)  # with its key, if bound
                if refreshed is not None:
                    await store.save(replace(entry, tokens=refreshed))
                    return refreshed
            scopes = select_scopes(
                challenge,
                resource_scopes=discovery.resource.scopes_supported,
                server_scopes=discovery.server.strings("scopes_supported"),
                previous=previous.requested_scope if previous is not None else (),
                step_up=step_up,
                want_refresh=isinstance(self.grant, AuthorizationCodeGrant),
            )
            advertised = discovery.server.strings("dpop_signing_alg_values_supported")
            dpop = DPoPKey() if use_dpop(self.dpop, advertised) else None
            entry, tokens = await self._grant(http, discovery, entry, scopes, store, dpop)
            await store.save(replace(entry, tokens=tokens))
            return tokens

    async def _refresh(
        self, http: httpx.AsyncClient, discovery: Discovery, entry: StoredAuthorization, tokens: TokenSet
    ) -> TokenSet | None:
        identity = self._identity_for_refresh(discovery, entry)
        if identity is None:
            return None
        dpop = DPoPKey(tokens.dpop_key) if tokens.dpop_key else None
        try:
            return await refresh(
                http, discovery.server, identity, tokens, resource=discovery.resource.resource, dpop=dpop
            )
        except TokenRequestError as exc:
            logger.info(
                "the refresh token was not accepted (%s); authorizing again", quote(exc.error or "error")
            )
            return None

    def _identity_for_refresh(
        self, discovery: Discovery, entry: StoredAuthorization
    ) -> ClientIdentity | None:
        if self.client is not None:
            return self.client.identity()
        if self.client_metadata_url is not None and discovery.server.flag(
            "client_id_metadata_document_supported"
        ):
            return ClientIdentity(self.client_metadata_url, auth_method="none", kind="metadata-document")
        if entry.client is not None:
            registered = entry.client
            return ClientIdentity(
                registered.client_id,
                registered.client_secret,
                auth_method=registered.token_endpoint_auth_method,
                kind="registered",
            )
        return None

    async def _grant(
        self,
        http: httpx.AsyncClient,
        discovery: Discovery,
        entry: StoredAuthorization,
        scopes: tuple[str, ...],
        store: TokenStore,
        dpop: DPoPKey | None,
    ) -> tuple[StoredAuthorization, TokenSet]:
        server, resource = discovery.server, discovery.resource.resource
        grant = self.grant
        if isinstance(grant, ClientCredentialsGrant):
            assert self.client is not None
            return entry, await client_credentials(
                http, server, self.client.identity(), resource=resource, scopes=scopes, dpop=dpop
            )
        if isinstance(grant, WorkloadIdentityGrant):
            client = self.client.identity() if self.client is not None else None
            tokens = await workload_identity(
                http, server, client, grant.read(), resource=resource, scopes=scopes, dpop=dpop
            )
            return entry, tokens
        if isinstance(grant, EnterpriseGrant):
            assert self.client is not None
            tokens = await enterprise_grant(
                http, server, self.client.identity(), grant.idp, resource=resource, scopes=scopes, dpop=dpop
            )
            return entry, tokens
        code_grant_endpoints(server)  # refuse before registering or opening a browser
        browser = grant.browser if grant.browser is not None else SystemBrowser()
        preferred = entry.client.redirect_uris[0] if entry.client and entry.client.redirect_uris else None
        async with browser.redirect(preferred) as target:
            redirect_uri = require_loopback_redirect(target.redirect_uri)
            identity, registered = await identify(
                http,
                server,
                redirect_uri=redirect_uri,
                pre_registered=self.client,
                metadata_url=self.client_metadata_url,
                stored=entry.client,
                client_name=self.client_name,
            )
            if registered is not None:
                entry = replace(entry, client=registered)
                await store.save(entry)
            tokens = await authorization_code(
                http,
                server,
                identity,
                target,
                redirect_uri=redirect_uri,
                resource=resource,
                scopes=scopes,
                dpop=dpop,
            )
        return entry, tokens
