"""The OAuth flow against a real loopback authorization server and MCP endpoint (tests/auth/server.py).

Every test makes real HTTP requests on 127.0.0.1 through ``httpx.AsyncClient(auth=OAuth(...))``,
on asyncio and on trio (the server is a thread, so nothing here depends on the event loop).
"""

from __future__ import annotations

import logging
import tracemalloc
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import anyio
import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from host_receiver.auth import (
    DEFAULT_HEADLESS_REDIRECT_URI,
    AuthorizationCodeGrant,
    ClientCredentialsGrant,
    EnterpriseGrant,
    EnterpriseIdp,
    HeadlessBrowser,
    MemoryTokenStore,
    OAuth,
    PreRegisteredClient,
    SystemBrowser,
    WorkloadIdentityGrant,
)
from host_receiver.auth._dpop import use_dpop
from host_receiver.errors import (
    AuthError,
    AuthorizationDenied,
    DiscoveryError,
    InsecureEndpoint,
    InsufficientScope,
    RegistrationError,
    ResourceMismatch,
    TokenRequestError,
)
from tests.auth.server import JWT_BEARER, TOKEN_EXCHANGE, OAuthServer, sent_secrets

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def server() -> Iterator[OAuthServer]:
    with OAuthServer() as running:
        yield running


def headless(**kwargs: Any) -> OAuth:
    kwargs.setdefault("store", MemoryTokenStore())
    return OAuth(grant=AuthorizationCodeGrant(HeadlessBrowser()), **kwargs)


async def call(server: OAuthServer, auth: OAuth, method: str = "tools/call") -> httpx.Response:
    async with httpx.AsyncClient(auth=auth) as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"name": "t"}}
        return await http.post(server.url, json=body)


def authorize_params(server: OAuthServer) -> list[dict[str, str]]:
    return [seen.params for seen in server.seen("/authorize")]


# --- the whole flow -------------------------------------------------------------------------


async def test_a_401_registers_authorizes_with_pkce_and_resource_then_the_request_succeeds(
    server: OAuthServer,
) -> None:
    store = MemoryTokenStore()
    auth = headless(store=store)
    response = await call(server, auth)
    assert response.status_code == 200, response.text
    assert response.json()["result"]["content"][0]["text"] == "called"
    assert server.errors == []  # PKCE verifier, redirect URI, resource and client auth all checked out
    [registration] = server.seen("/register")
    assert registration.params["application_type"] == "native"
    assert registration.params["redirect_uris"] == [DEFAULT_HEADLESS_REDIRECT_URI]
    assert registration.params["grant_types"] == ["authorization_code", "refresh_token"]
    [authorize] = authorize_params(server)
    assert authorize["response_type"] == "code"
    assert authorize["code_challenge_method"] == "S256"
    assert authorize["resource"] == server.url
    assert len(authorize["state"]) >= 20
    assert "scope" not in authorize  # nothing in the challenge, no scopes_supported
    [token] = server.token_requests("authorization_code")
    assert token.params["resource"] == server.url
    assert token.params["redirect_uri"] == DEFAULT_HEADLESS_REDIRECT_URI
    [entry] = await store.entries()
    assert entry.server == server.url and entry.issuer == server.base
    assert entry.client is not None and entry.client.client_id in server.clients
    assert entry.tokens is not None and entry.tokens.refresh_token is not None

    again = await call(server, auth)
    assert again.status_code == 200
    assert len(server.seen("/authorize")) == 1  # the token is reused
    assert again.request.headers["authorization"] == response.request.headers["authorization"]


async def test_concurrent_401s_share_one_authorization(server: OAuthServer) -> None:
    auth = headless()
    statuses: list[int] = []
    async with httpx.AsyncClient(auth=auth) as http:

        async def one(n: int) -> None:
            body = {"jsonrpc": "2.0", "id": n, "method": "ping"}
            statuses.append((await http.post(server.url, json=body)).status_code)

        async with anyio.create_task_group() as tasks:
            for n in range(4):
                tasks.start_soon(one, n)
    assert statuses == [200] * 4
    assert len(server.seen("/authorize")) == 1
    assert len(server.seen("/register")) == 1


# --- refusals ------------------------------------------------------------------------------------


async def test_resource_mismatch_is_refused_before_the_authorization_server_is_contacted(
    server: OAuthServer,
) -> None:
    server.prm_resource = "https://evil.example/mcp"
    with pytest.raises(ResourceMismatch, match=r"https://evil\.example/mcp.*refusing"):
        await call(server, headless())
    assert server.seen("/.well-known/oauth-authorization-server") == []
    assert server.seen("/authorize") == [] and server.seen("/register") == []


async def test_metadata_with_another_issuer_is_not_used(server: OAuthServer) -> None:
    server.metadata_issuer = "https://honest.example"
    with pytest.raises(DiscoveryError, match=r"states issuer https://honest\.example"):
        await call(server, headless())
    assert server.seen("/register") == [] and server.seen("/authorize") == []


async def test_a_non_loopback_redirect_uri_is_refused(server: OAuthServer) -> None:
    auth = OAuth(
        grant=AuthorizationCodeGrant(HeadlessBrowser("http://client.example/callback")),
        store=MemoryTokenStore(),
    )
    with pytest.raises(InsecureEndpoint, match=r"redirect URI http://client\.example/callback"):
        await call(server, auth)
    assert server.seen("/register") == [] and server.seen("/authorize") == []


@pytest.mark.parametrize(
    ("endpoint", "what"),
    [
        ("authorization_endpoint", "authorization endpoint"),
        ("token_endpoint", "token endpoint"),
        ("registration_endpoint", "registration endpoint"),
        ("idp_token_endpoint", "identity provider token endpoint"),
    ],
)
async def test_plain_http_endpoints_off_loopback_are_refused(
    server: OAuthServer, endpoint: str, what: str
) -> None:
    insecure = "http://auth.example/oauth"
    if endpoint == "idp_token_endpoint":  # the identity provider's, for the enterprise grant
        auth = machine_auth(server, "id-jag", idp_token_endpoint=insecure)
    else:
        setattr(server, endpoint, insecure)
        auth = headless()
    with pytest.raises(InsecureEndpoint, match=rf"refusing the {what} http://auth\.example/oauth: .*https"):
        await call(server, auth)
    assert server.seen("/register") == [] and server.seen("/authorize") == []
    assert server.token_requests() == [] and server.seen("/idp/token") == []


@pytest.mark.parametrize("methods", [None, ["plain"]])
async def test_a_server_without_s256_is_refused(server: OAuthServer, methods: list[str] | None) -> None:
    server.code_challenge_methods = methods
    with pytest.raises(AuthError, match="PKCE"):
        await call(server, headless())
    assert server.seen("/authorize") == []


@pytest.mark.parametrize(
    ("supported", "iss", "accepted"),
    [
        (True, "right", True),
        (True, None, False),
        (True, "wrong", False),
        (False, "right", True),
        (False, "wrong", False),
        (False, None, True),
    ],
)
async def test_the_iss_parameter_is_checked_as_the_2026_table_says(
    server: OAuthServer, supported: bool, iss: str | None, accepted: bool
) -> None:
    server.iss_supported, server.iss_in_response = supported, iss
    if accepted:
        assert (await call(server, headless())).status_code == 200
        return
    with pytest.raises(AuthorizationDenied, match="iss") as caught:
        await call(server, headless())
    assert server.token_requests("authorization_code") == []  # the code was not redeemed
    assert not any(code in str(caught.value) for code in server.codes)


async def test_a_wrong_state_is_refused_and_the_code_not_redeemed(server: OAuthServer) -> None:
    server.wrong_state = True
    with pytest.raises(AuthorizationDenied, match="state does not match"):
        await call(server, headless())
    assert server.token_requests("authorization_code") == []


async def test_a_sign_in_page_tells_the_headless_browser_a_person_is_needed(server: OAuthServer) -> None:
    server.login_page = True
    with pytest.raises(AuthorizationDenied, match="system browser"):
        await call(server, headless())


# --- scope selection ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("challenge", "prm_scopes", "as_scopes", "expected"),
    [
        ("files:read", ["a", "b"], None, "files:read"),
        (None, ["a", "b"], None, "a b"),
        (None, None, None, None),
        (None, ["a"], ["a", "offline_access"], "a offline_access"),
        (None, ["a"], ["a", "b"], "a"),
        (None, None, ["offline_access"], None),
    ],
)
async def test_scope_selection(
    server: OAuthServer,
    challenge: str | None,
    prm_scopes: list[str] | None,
    as_scopes: list[str] | None,
    expected: str | None,
) -> None:
    server.challenge_scope, server.prm_scopes, server.as_scopes = challenge, prm_scopes, as_scopes
    assert (await call(server, headless())).status_code == 200
    [authorize] = authorize_params(server)
    assert authorize.get("scope") == expected


async def test_insufficient_scope_steps_up_with_the_union_of_scopes(server: OAuthServer) -> None:
    server.challenge_scope = "mcp:basic"
    server.call_scopes = ("mcp:basic", "mcp:write")
    auth = headless()
    assert (await call(server, auth, "ping")).status_code == 200
    assert (await call(server, auth)).status_code == 200
    assert [p.get("scope") for p in authorize_params(server)] == ["mcp:basic", "mcp:basic mcp:write"]


async def test_step_up_stops_after_three_authorizations_with_a_clear_error(server: OAuthServer) -> None:
    server.challenge_scope = "mcp:admin"
    server.call_scopes = ("mcp:admin",)
    server.withhold_scopes = frozenset({"mcp:admin"})
    with pytest.raises(InsufficientScope, match=r"403 insufficient_scope after 3 authorizations.*mcp:admin"):
        await call(server, headless())
    assert len(server.seen("/authorize")) == 3
    assert len(server.seen("/mcp")) == 4  # the first try, then one per token


# --- refresh ----------------------------------------------------------------------------------------


async def test_an_expired_token_is_refreshed_before_any_new_authorization(server: OAuthServer) -> None:
    auth = headless()
    assert (await call(server, auth)).status_code == 200
    server.revoke_access_tokens()
    assert (await call(server, auth)).status_code == 200
    assert len(server.seen("/authorize")) == 1
    [refresh] = server.token_requests("refresh_token")
    assert refresh.params["resource"] == server.url
    assert server.errors == []


async def test_a_refused_refresh_falls_back_to_a_new_authorization(server: OAuthServer) -> None:
    auth = headless()
    assert (await call(server, auth)).status_code == 200
    server.revoke_access_tokens()
    server.refresh.clear()
    assert (await call(server, auth)).status_code == 200
    assert len(server.token_requests("refresh_token")) == 1
    assert len(server.seen("/authorize")) == 2


@pytest.mark.parametrize("pre_registered", [False, True])
async def test_a_server_that_moves_to_another_authorization_server_is_followed(
    server: OAuthServer, pre_registered: bool
) -> None:
    store = MemoryTokenStore()
    if pre_registered:
        server.pre_registered, server.auth_methods = {"pre": "sec"}, ["client_secret_basic"]
    auth = headless(store=store, client=PreRegisteredClient("pre", "sec") if pre_registered else None)
    assert (await call(server, auth)).status_code == 200
    with OAuthServer() as other:
        other.pre_registered, other.auth_methods = server.pre_registered, server.auth_methods
        other.access = server.access  # the resource accepts the new server's tokens
        server.authorization_server = other.base
        server.revoke_access_tokens()
        assert (await call(server, auth)).status_code == 200
        assert len(other.seen("/register")) == (0 if pre_registered else 1)
        assert len(other.seen("/authorize")) == 1
        assert other.token_requests("refresh_token") == []  # the old server's refresh token stays with it
        assert other.errors == []
    assert sorted(e.issuer for e in await store.entries()) == sorted([server.base, other.base])


# --- client identity and authentication -----------------------------------------------------------------


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post", "none"])
async def test_token_endpoint_authentication_follows_the_metadata(server: OAuthServer, method: str) -> None:
    server.auth_methods = [method]
    assert (await call(server, headless())).status_code == 200
    assert server.errors == []
    [token] = server.token_requests("authorization_code")
    assert token.headers.get("authorization", "").startswith("Basic ") == (method == "client_secret_basic")
    assert ("client_secret" in token.params) == (method == "client_secret_post")


async def test_a_pre_registered_client_comes_first(server: OAuthServer) -> None:
    server.pre_registered = {"pre-client": "pre-secret"}
    server.auth_methods = ["client_secret_basic"]
    server.cimd = True
    auth = headless(
        client=PreRegisteredClient("pre-client", "pre-secret"), client_metadata_url="https://c.example/m.json"
    )
    assert (await call(server, auth)).status_code == 200
    assert server.seen("/register") == []
    assert authorize_params(server)[0]["client_id"] == "pre-client"
    assert server.errors == []


async def test_a_pre_registered_client_of_another_issuer_is_an_error(server: OAuthServer) -> None:
    auth = headless(client=PreRegisteredClient("pre-client", issuer="https://elsewhere.example"))
    with pytest.raises(RegistrationError, match=r"registered with https://elsewhere\.example"):
        await call(server, auth)


async def test_a_client_metadata_document_is_used_when_the_server_supports_it(server: OAuthServer) -> None:
    server.cimd = True
    url = "https://client.example/oauth/client.json"
    assert (await call(server, headless(client_metadata_url=url))).status_code == 200
    assert server.seen("/register") == []
    assert authorize_params(server)[0]["client_id"] == url
    assert server.token_requests()[0].params["client_id"] == url


async def test_without_metadata_document_support_the_client_registers(server: OAuthServer) -> None:
    assert (
        await call(server, headless(client_metadata_url="https://client.example/c.json"))
    ).status_code == 200
    assert len(server.seen("/register")) == 1


async def test_no_way_to_identify_the_client_is_a_clear_error(server: OAuthServer) -> None:
    server.registration = False
    with pytest.raises(RegistrationError, match="--auth-client-id"):
        await call(server, headless())


def test_a_client_metadata_url_must_be_https_with_a_path() -> None:
    for bad in ("http://client.example/c.json", "https://client.example", "https://client.example/"):
        with pytest.raises(AuthError, match="https with a path"):
            OAuth(client_metadata_url=bad)


# --- machine to machine ---------------------------------------------------------------------------------


CLIENT_SECRET = "svc-secret-" + "s" * 16
ID_TOKEN = "idt-" + "x" * 20
KEY_ALGORITHMS = {"EC": "ES256", "OKP": "Ed25519", "RSA": "RS256"}


def private_key(kind: str) -> tuple[str, Any]:
    """A fresh unencrypted PEM private key of ``kind`` and its public joserfc key."""
    from joserfc.jwk import ECKey, OKPKey, RSAKey

    key: ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey | rsa.RSAPrivateKey
    key_type: type[ECKey] | type[OKPKey] | type[RSAKey]
    if kind == "EC":
        key, key_type = ec.generate_private_key(ec.SECP256R1()), ECKey
    elif kind == "OKP":
        key, key_type = ed25519.Ed25519PrivateKey.generate(), OKPKey
    else:
        key, key_type = rsa.generate_private_key(public_exponent=65537, key_size=2048), RSAKey
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return pem, key_type.import_key(key_type.import_key(pem).as_dict(private=False))


def machine_auth(server: OAuthServer, grant: str, *, idp_token_endpoint: str | None = None) -> OAuth:
    """``server`` set up for a machine-to-machine grant, and the OAuth that uses it.

    ``grant``: ``secret`` (client credentials, client_secret_basic), ``EC``, ``OKP`` or
    ``RSA`` (client credentials, private_key_jwt with such a key), ``id-jag`` (the
    enterprise grant, the client authenticated with client_secret_basic).
    """
    if grant == "id-jag":
        server.idp_id_token = ID_TOKEN
        server.pre_registered = {"xaa": CLIENT_SECRET}
        server.auth_methods, server.grant_types = ["client_secret_basic"], [JWT_BEARER]
        idp = EnterpriseIdp(ID_TOKEN, idp_token_endpoint or f"{server.base}/idp/token", "idp-client")
        client = PreRegisteredClient("xaa", CLIENT_SECRET)
        return OAuth(grant=EnterpriseGrant(idp), client=client, store=MemoryTokenStore())
    server.grant_types = ["client_credentials"]
    if grant == "secret":
        server.pre_registered, server.auth_methods = {"svc": CLIENT_SECRET}, ["client_secret_basic"]
        client = PreRegisteredClient("svc", CLIENT_SECRET)
    else:
        pem, server.client_public_key = private_key(grant)
        server.pre_registered = {"svc": ""}
        server.auth_methods, server.signing_algs = ["private_key_jwt"], [KEY_ALGORITHMS[grant]]
        client = PreRegisteredClient("svc", private_key_pem=pem)
    return OAuth(grant=ClientCredentialsGrant(), client=client, store=MemoryTokenStore())


async def test_client_credentials_with_a_secret(server: OAuthServer) -> None:
    auth = machine_auth(server, "secret")
    server.prm_scopes = ["jobs"]
    assert (await call(server, auth)).status_code == 200
    [token] = server.token_requests("client_credentials")
    assert token.params["scope"] == "jobs" and token.params["resource"] == server.url
    assert server.seen("/authorize") == [] and server.errors == []


@pytest.mark.parametrize("kind", KEY_ALGORITHMS)
async def test_client_credentials_with_a_private_key_jwt(server: OAuthServer, kind: str) -> None:
    auth = machine_auth(server, kind)
    assert (await call(server, auth)).status_code == 200
    assert server.errors == []  # signature and its algorithm, aud = issuer, iss = sub = client id
    [token] = server.token_requests("client_credentials")
    assert token.params["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


async def test_the_enterprise_grant_exchanges_the_id_token_then_presents_the_id_jag(
    server: OAuthServer,
) -> None:
    auth = machine_auth(server, "id-jag")
    assert (await call(server, auth)).status_code == 200
    assert server.errors == []
    [exchange] = server.seen("/idp/token")
    assert exchange.params["client_id"] == "idp-client"
    [bearer] = server.token_requests(JWT_BEARER)
    assert bearer.params["assertion"] in server.issued_grants
    assert bearer.headers["authorization"].startswith("Basic ")
    assert isinstance(auth.grant, EnterpriseGrant)
    assert CLIENT_SECRET not in repr(auth) and ID_TOKEN not in repr(auth.grant) + repr(auth.grant.idp)


async def test_workload_identity_presents_the_platforms_jwt_read_afresh_and_no_client(
    server: OAuthServer, tmp_path: Path
) -> None:
    """SEP-1933: no registration, no browser; a rotated assertion file is read again."""
    server.workload_assertions = {"wl-first", "wl-rotated"}
    assertion = tmp_path / "workload.jwt"
    assertion.write_text("wl-first\n")
    auth = OAuth(grant=WorkloadIdentityGrant(assertion_file=assertion), store=MemoryTokenStore())
    assert (await call(server, auth)).status_code == 200
    assertion.write_text("wl-rotated\n")
    server.revoke_access_tokens()
    assert (await call(server, auth)).status_code == 200
    requests = server.token_requests(JWT_BEARER)
    assert [seen.params["assertion"] for seen in requests] == ["wl-first", "wl-rotated"]
    assert all("client_id" not in seen.params and "authorization" not in seen.headers for seen in requests)
    assert {seen.params["resource"] for seen in requests} == {server.url}
    assert server.seen("/register") == [] and server.seen("/authorize") == []


async def test_a_refused_workload_assertion_is_final_and_never_shown(server: OAuthServer) -> None:
    auth = OAuth(grant=WorkloadIdentityGrant(assertion="wl-expired-secret"), store=MemoryTokenStore())
    with pytest.raises(
        TokenRequestError,
        match=r"refused the workload identity \(JWT bearer\) grant: invalid_grant \(unknown workload\)",
    ):
        await call(server, auth)
    assert len(server.token_requests()) == 1  # no retry, no other grant
    assert "wl-expired-secret" not in repr(auth) + repr(auth.grant)


def test_a_workload_grant_takes_one_source_of_its_assertion(tmp_path: Path) -> None:
    with pytest.raises(AuthError, match="an assertion or an assertion file, one of them"):
        WorkloadIdentityGrant()
    with pytest.raises(AuthError, match="an assertion or an assertion file, one of them"):
        WorkloadIdentityGrant(assertion="a", assertion_file=tmp_path / "b")
    with pytest.raises(AuthError, match=r"cannot read the assertion file .*missing\.jwt: FileNotFoundError"):
        WorkloadIdentityGrant(assertion_file=tmp_path / "missing.jwt").read()


# --- DPoP (RFC 9449, SEP-1932) -------------------------------------------------------------------


@pytest.mark.parametrize("nonce", [None, "server-nonce-1"], ids=["no-nonce", "nonces"])
async def test_dpop_binds_the_token_to_a_key_and_proves_it_on_every_request(
    server: OAuthServer, nonce: str | None
) -> None:
    """Offered by the authorization server: used without being asked; nonces answered by one retry."""
    server.dpop, server.dpop_nonce = True, nonce
    store = MemoryTokenStore()
    response = await call(server, headless(store=store))
    assert response.status_code == 200, response.text
    assert server.errors == []  # every proof: typ, key, signature, jti, htm, htu, iat, ath, nonce
    assert response.request.headers["authorization"].startswith("DPoP ")
    [(_, token_proof), (_, mcp_proof)] = server.dpop_proofs  # the accepted ones, after any nonce retry
    assert token_proof["htu"] == f"{server.base}/token" and "ath" not in token_proof
    assert mcp_proof["htu"] == server.url and mcp_proof["htm"] == "POST" and "ath" in mcp_proof
    assert {token_proof.get("nonce"), mcp_proof.get("nonce")} == {nonce}
    assert len(server.token_requests("authorization_code")) == (2 if nonce else 1)
    [entry] = await store.entries()
    assert entry.tokens is not None and entry.tokens.token_type == "DPoP" and entry.tokens.dpop_key
    assert "DPoP-bound" in entry.summary()


async def test_a_stored_dpop_token_and_its_key_serve_the_next_run_and_the_refresh(
    server: OAuthServer,
) -> None:
    server.dpop = True
    store = MemoryTokenStore()
    assert (await call(server, headless(store=store))).status_code == 200
    assert (await call(server, headless(store=store))).status_code == 200  # a new OAuth, the stored key
    server.revoke_access_tokens()
    assert (await call(server, headless(store=store))).status_code == 200
    assert server.errors == []
    assert len(server.seen("/authorize")) == 1 and len(server.token_requests("refresh_token")) == 1
    assert len(set(server.dpop_bound.values())) == 1  # the refreshed token is bound to the same key


async def test_dpop_is_not_used_when_turned_off_or_not_offered(server: OAuthServer) -> None:
    server.dpop = True
    response = await call(server, headless(store=MemoryTokenStore(), dpop=False))
    assert response.request.headers["authorization"].startswith("Bearer ")
    assert "dpop" not in server.token_requests()[0].headers
    server.dpop = False
    response = await call(server, headless(store=MemoryTokenStore()))
    assert response.request.headers["authorization"].startswith("Bearer ") and server.errors == []


def test_dpop_asked_for_needs_es256_among_the_servers_algorithms() -> None:
    assert use_dpop(None, ["ES256", "RS256"]) and use_dpop(True, None) and not use_dpop(None, None)
    assert not use_dpop(None, ["RS256"]) and not use_dpop(False, ["ES256"])
    with pytest.raises(AuthError, match=r"DPoP algorithms \(RS256\) do not include ES256"):
        use_dpop(True, ["RS256"])


@pytest.mark.parametrize(
    ("grant", "refused"),
    [
        ("code", "authorization_code"),  # code, code_verifier, the registered client's secret
        ("secret", "client_credentials"),  # the Basic credentials
        ("EC", "client_credentials"),  # the client assertion
        ("id-jag", TOKEN_EXCHANGE),  # the ID token
        ("id-jag", JWT_BEARER),  # the ID-JAG and the Basic credentials
    ],
)
async def test_secrets_a_server_echoes_in_a_refusal_are_masked(
    server: OAuthServer, grant: str, refused: str
) -> None:
    if grant == "code":
        server.auth_methods = ["client_secret_post"]  # a registered client whose secret goes in the body
        auth = headless()
    else:
        auth = machine_auth(server, grant)
    server.echo_refusal = refused
    with pytest.raises(
        TokenRequestError, match=r"refused the .*: invalid_grant .*\(rejected: .*\*\*\*"
    ) as caught:
        await call(server, auth)
    [request] = [seen for seen in server.log if seen.params.get("grant_type") == refused]
    assert caught.value.error is not None and caught.value.error.startswith("invalid_grant")
    assert leaks(sent_secrets(request), [str(caught.value), caught.value.error]) == []


async def test_a_refused_refresh_that_echoes_the_refresh_token_keeps_it_out_of_the_log(
    server: OAuthServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    auth = headless()
    assert (await call(server, auth)).status_code == 200
    server.revoke_access_tokens()
    server.echo_refusal = "refresh_token"  # its error code and description repeat the refresh token
    assert (await call(server, auth)).status_code == 200  # authorized again
    [refresh] = server.token_requests("refresh_token")
    assert len(server.seen("/authorize")) == 2
    assert any("the refresh token was not accepted (invalid_grant ***" in text for text in log_texts(caplog))
    assert leaks(sent_secrets(refresh), log_texts(caplog)) == []


# --- a browser step the host writes ------------------------------------------------------------


class WindowBrowser:
    """A host's own browser step (its window; here an HTTP client) on the host's redirect URI."""

    redirect_uri = "http://127.0.0.1:8765/host-window"

    def __init__(self) -> None:
        self.preferred: list[str | None] = []
        self.opened: list[str] = []

    @asynccontextmanager
    async def redirect(self, preferred: str | None) -> AsyncIterator[WindowBrowser]:
        self.preferred.append(preferred)
        yield self

    async def authorize(self, authorization_url: str) -> dict[str, str]:
        self.opened.append(authorization_url)
        async with httpx.AsyncClient() as window:
            answer = await window.get(authorization_url)
        assert answer.status_code == 302, answer.status_code
        return dict(parse_qsl(urlsplit(answer.headers["location"]).query))


async def test_a_browser_step_the_host_writes_is_used_with_its_redirect_uri(server: OAuthServer) -> None:
    browser = WindowBrowser()
    auth = OAuth(grant=AuthorizationCodeGrant(browser), store=MemoryTokenStore())
    assert (await call(server, auth)).status_code == 200
    [registration] = server.seen("/register")
    assert registration.params["redirect_uris"] == [WindowBrowser.redirect_uri]
    [authorize] = authorize_params(server)
    assert authorize["redirect_uri"] == WindowBrowser.redirect_uri
    assert len(browser.opened) == 1 and browser.opened[0].startswith(f"{server.base}/authorize?")
    server.revoke_access_tokens()
    server.refresh.clear()
    assert (await call(server, auth)).status_code == 200  # authorized again, through the host's window
    assert browser.preferred == [None, WindowBrowser.redirect_uri]  # offered the URI registered before
    assert len(browser.opened) == 2 and len(server.seen("/register")) == 1
    assert server.errors == []  # PKCE, redirect URI and state all checked out


# --- the system browser's loopback listener ------------------------------------------------


async def test_the_system_browser_takes_the_code_on_a_loopback_listener(server: OAuthServer) -> None:
    opened: list[str] = []

    def browser(url: str) -> bool:  # what a browser does: follow the redirect to the listener
        opened.append(url)
        with httpx.Client(follow_redirects=True) as http:
            page = http.get(url)
        assert page.status_code == 200 and b"You can close this window" in page.content
        return True

    auth = OAuth(
        grant=AuthorizationCodeGrant(SystemBrowser(open_url=browser, announce=lambda url: None)),
        store=MemoryTokenStore(),
    )
    assert (await call(server, auth)).status_code == 200
    redirect = authorize_params(server)[0]["redirect_uri"]
    assert len(opened) == 1 and opened[0].startswith(f"{server.base}/authorize?")
    assert redirect.startswith("http://127.0.0.1:") and redirect.endswith("/callback")
    assert server.errors == []


async def test_the_system_browser_gives_up_after_its_timeout(server: OAuthServer) -> None:
    browser = SystemBrowser(timeout=0.3, open_url=lambda url: True, announce=lambda url: None)
    with pytest.raises(AuthorizationDenied, match="no authorization response"):
        await call(server, OAuth(grant=AuthorizationCodeGrant(browser), store=MemoryTokenStore()))


# --- secrets -------------------------------------------------------------------------------


@pytest.mark.slow
async def test_no_token_secret_code_verifier_or_state_appears_in_any_log_record(
    server: OAuthServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server.auth_methods = ["client_secret_post"]  # a registered client with a secret
    server.challenge_scope = "mcp:basic"
    server.call_scopes = ("mcp:basic", "mcp:write")
    auth = headless()
    assert (await call(server, auth, "ping")).status_code == 200
    assert (await call(server, auth)).status_code == 200  # step-up
    server.revoke_access_tokens()
    assert (await call(server, auth)).status_code == 200  # refresh
    server.wrong_state = True
    server.revoke_access_tokens()
    server.refresh.clear()
    with pytest.raises(AuthorizationDenied) as failure:
        await call(server, auth)
    hidden = [
        *server.secrets_issued,
        *(p["state"] for p in authorize_params(server)),
        *(s.params["code_verifier"] for s in server.token_requests("authorization_code")),
    ]
    assert len(hidden) >= 12 and all(len(value) >= 16 for value in hidden)
    texts = [*log_texts(caplog), str(failure.value)]
    assert len(texts) > 20
    assert leaks(hidden, texts) == []


@pytest.mark.parametrize("grant", ["secret", "EC", "id-jag"])
async def test_no_secret_of_the_machine_grants_appears_in_any_log_record(
    server: OAuthServer, caplog: pytest.LogCaptureFixture, grant: str
) -> None:
    """Client secret, client assertions, ID token, ID-JAGs and tokens: never in a record, at DEBUG."""
    caplog.set_level(logging.DEBUG)
    auth = machine_auth(server, grant)
    for _ in range(2):  # a grant, then another once the token is revoked
        assert (await call(server, auth)).status_code == 200
        server.revoke_access_tokens()
    hidden = [*server.secrets_issued, *(v for seen in server.log for v in sent_secrets(seen))]
    assert len(hidden) >= 4 + (4 if grant == "id-jag" else 2)
    texts = log_texts(caplog)
    assert len(texts) > 10
    assert leaks(hidden, texts) == []


def log_texts(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Every log record's message and exception text."""
    texts = [record.getMessage() for record in caplog.records]
    return texts + [str(record.exc_info) for record in caplog.records if record.exc_info]


def leaks(hidden: list[str], texts: list[str]) -> list[tuple[str, str]]:
    """(secret, text) pairs where ``text`` holds a secret, or 16 characters of one in a row."""
    assert hidden and all(len(value) >= 16 for value in hidden)
    return [
        (value, text)
        for value in hidden
        for text in texts
        if any(value[i : i + 16] in text for i in range(len(value) - 15))
    ]


# --- the 401's body -----------------------------------------------------------------------------


@pytest.mark.slow
async def test_a_401_whose_body_inflates_to_64_mb_is_read_no_further_than_64_kib() -> None:
    """httpx reads a 401's body before the retry: read whole, this one would take 64 MB at once."""
    with OAuthServer(unauthorized_body=64 * 1024 * 1024) as server:
        tracemalloc.start()
        try:
            response = await call(server, headless(store=MemoryTokenStore()))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert response.status_code == 200, response.text
    assert response.history[0].status_code == 401
    assert len(response.history[0].content) == 64 * 1024  # what was read of it, inflated
    assert peak < 8 * 1024 * 1024
