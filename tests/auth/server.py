"""A loopback OAuth authorization server and protected MCP endpoint for the auth tests.

``with OAuthServer() as server:`` runs, on 127.0.0.1 in a thread (standard
library ``http.server``), on one origin:

- the protected resource: ``POST /mcp`` answers JSON-RPC (``initialize``,
  ``tools/call``, anything else ``{}``; notifications 202) when the bearer
  token is valid, else 401 with a Bearer challenge; a ``tools/call`` whose
  token lacks :attr:`call_scopes` gets 403 ``insufficient_scope``;
  ``GET /mcp`` is 405;
- its metadata at ``/.well-known/oauth-protected-resource/mcp``;
- the authorization server (issuer: the origin): metadata at
  ``/.well-known/oauth-authorization-server``, ``/register`` (RFC 7591),
  ``/authorize`` (redirects at once with a code, ``state`` and optionally
  ``iss``), ``/token`` (authorization_code with PKCE S256 checked, refresh_token,
  client_credentials, JWT bearer), and an identity provider's token exchange
  at ``/idp/token``.

The server checks what a real one would (PKCE verifier against challenge,
redirect URI against the registration, ``resource`` the same in both requests,
client authentication by the registered method, private_key_jwt signatures)
and records every request in :attr:`log`, so tests can see what the client
sent. Its knobs are plain attributes, set before the client runs.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, parse_qsl, unquote_plus, urlencode, urlsplit

from joserfc import jws, jwt
from joserfc.jwk import ECKey

from tests.serving import ServerThread

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"


#: Request parameters whose values are secrets: credentials, grants, codes.
SECRET_PARAMS = (
    "client_secret",
    "client_assertion",
    "code",
    "code_verifier",
    "refresh_token",
    "assertion",
    "subject_token",
)


@dataclass
class Seen:
    """One request as the server saw it."""

    method: str
    path: str
    params: dict[str, Any]  # query or form parameters (strings), or the JSON body for /register and /mcp
    headers: dict[str, str]


def sent_secrets(seen: Seen) -> list[str]:
    """The secret values one request carried: its secret parameters and its Basic credentials."""
    values = [seen.params[name] for name in SECRET_PARAMS if seen.params.get(name)]
    header = seen.headers.get("authorization", "")
    if header.startswith("Basic "):
        values += [header, unquote_plus(base64.b64decode(header[6:]).decode().partition(":")[2])]
    return values


@dataclass
class Grant:
    client_id: str
    redirect_uri: str
    challenge: str
    method: str
    scope: tuple[str, ...]
    resource: str | None


@dataclass
class OAuthServer:
    # --- knobs ---------------------------------------------------------------------------
    challenge_scope: str | None = None  # scope in the 401 challenge
    prm_scopes: list[str] | None = None
    prm_resource: str | None = None  # None: the real /mcp URL
    prm_in_header: bool = True
    authorization_server: str | None = None  # None: this server's own
    as_scopes: list[str] | None = None
    code_challenge_methods: list[str] | None = field(default_factory=lambda: ["S256"])
    auth_methods: list[str] | None = field(default_factory=lambda: ["none"])
    signing_algs: list[str] | None = None
    grant_types: list[str] | None = None
    registration: bool = True
    cimd: bool = False
    metadata_issuer: str | None = None  # None: the true issuer
    iss_supported: bool = False
    iss_in_response: str | None = None  # "right", "wrong" or None (absent)
    wrong_state: bool = False
    authorization_endpoint: str | None = None  # None: ours
    token_endpoint: str | None = None
    registration_endpoint: str | None = None  # None: ours (when registration is on)
    call_scopes: tuple[str, ...] = ()
    token_lifetime: int = 3600
    issue_refresh: bool = True
    pre_registered: dict[str, str] = field(default_factory=dict)  # client_id -> secret
    client_public_key: Any = None  # joserfc key for private_key_jwt
    idp_id_token: str | None = None
    withhold_scopes: frozenset[str] = frozenset()  # never granted, though asked for
    login_page: bool = False  # /authorize answers 200 (a sign-in page) instead of redirecting
    echo_refusal: str | None = None  # a grant_type refused with everything the request sent echoed back
    workload_assertions: set[str] = field(default_factory=set)  # JWT bearer grants taken without a client
    dpop: bool = False  # advertise ES256 DPoP; a token request with a proof gets a token bound to its key
    dpop_nonce: str | None = None  # with dpop: proofs must carry this nonce (token endpoint and resource)
    unauthorized_body: int = 0  # > 0: the MCP endpoint's 401 carries a gzip body inflating to this many bytes
    # --- records -------------------------------------------------------------------------
    log: list[Seen] = field(default_factory=list)
    clients: dict[str, dict[str, Any]] = field(default_factory=dict)
    codes: dict[str, Grant] = field(default_factory=dict)
    access: dict[str, tuple[tuple[str, ...], float]] = field(default_factory=dict)
    refresh: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    issued_grants: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)  # what the server found wrong in a request
    secrets_issued: list[str] = field(default_factory=list)  # every token, code and client secret
    dpop_bound: dict[str, str] = field(default_factory=dict)  # access token -> its key's thumbprint
    dpop_proofs: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (path, claims) accepted

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.port = self._http.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.base}/mcp"
        self._serving = ServerThread(self._http)

    def __enter__(self) -> OAuthServer:
        self._serving.start()
        return self

    def __exit__(self, *exc: object | TracebackType) -> None:
        self._serving.stop()
        self._http.server_close()

    # --- views for tests -------------------------------------------------------------------

    def seen(self, path: str) -> list[Seen]:
        return [s for s in self.log if s.path == path]

    def token_requests(self, grant_type: str | None = None) -> list[Seen]:
        return [
            s for s in self.seen("/token") if grant_type is None or s.params.get("grant_type") == grant_type
        ]

    def revoke_access_tokens(self) -> None:
        self.access.clear()

    # --- documents ----------------------------------------------------------------------------

    def prm(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "resource": self.prm_resource or self.url,
            "authorization_servers": [self.authorization_server or self.base],
        }
        if self.prm_scopes is not None:
            document["scopes_supported"] = self.prm_scopes
        return document

    def as_metadata(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "issuer": self.metadata_issuer or self.base,
            "authorization_endpoint": self.authorization_endpoint or f"{self.base}/authorize",
            "token_endpoint": self.token_endpoint or f"{self.base}/token",
            "response_types_supported": ["code"],
        }
        optional = {
            "registration_endpoint": (self.registration_endpoint or f"{self.base}/register")
            if self.registration
            else None,
            "code_challenge_methods_supported": self.code_challenge_methods,
            "token_endpoint_auth_methods_supported": self.auth_methods,
            "token_endpoint_auth_signing_alg_values_supported": self.signing_algs,
            "grant_types_supported": self.grant_types,
            "scopes_supported": self.as_scopes,
            "client_id_metadata_document_supported": True if self.cimd else None,
            "authorization_response_iss_parameter_supported": True if self.iss_supported else None,
            "dpop_signing_alg_values_supported": ["ES256"] if self.dpop else None,
        }
        document.update({k: v for k, v in optional.items() if v is not None})
        return document

    def challenge(self, *, error: str | None = None, scope: str | None = None) -> str:
        parts = []
        if self.prm_in_header:
            parts.append(f'resource_metadata="{self.base}/.well-known/oauth-protected-resource/mcp"')
        if scope:
            parts.append(f'scope="{scope}"')
        if error:
            parts.append(f'error="{error}"')
        return "Bearer " + ", ".join(parts) if parts else "Bearer"

    # --- token endpoint ---------------------------------------------------------------------------

    def _client_of(self, seen: Seen) -> str | None:
        """The authenticated client id: right credentials, by a method that client may use."""
        header = seen.headers.get("authorization", "")
        params = seen.params
        ident: str | None
        if header.startswith("Basic "):
            ident, _, secret = base64.b64decode(header[6:]).decode().partition(":")
            ident, secret = unquote_plus(ident), unquote_plus(secret)
            good = self._secret_of(ident) == secret and self._allowed(ident, "client_secret_basic")
            return ident if good else None
        if "client_assertion" in params:
            ident = self._verify_assertion(params)
            return ident if ident is not None and self._allowed(ident, "private_key_jwt") else None
        ident = params.get("client_id")
        if ident is None:
            return None
        if "client_secret" in params:
            good = self._secret_of(ident) == params["client_secret"] and self._allowed(
                ident, "client_secret_post"
            )
            return ident if good else None
        return ident if self._allowed(ident, "none") else None

    def _secret_of(self, ident: str) -> str | None:
        if ident in self.pre_registered:
            return self.pre_registered[ident]
        return self.clients.get(ident, {}).get("client_secret")

    def _allowed(self, ident: str, method: str) -> bool:
        if ident in self.pre_registered:
            return method in (self.auth_methods or ["client_secret_basic"])
        if ident.startswith("https://"):
            return method == "none"
        return bool(self.clients.get(ident, {}).get("token_endpoint_auth_method") == method)

    def _verify_assertion(self, params: dict[str, str]) -> str | None:
        from joserfc import jwt

        try:
            assertion = params["client_assertion"]
            token = jwt.decode(assertion, self.client_public_key, algorithms=self.signing_algs)
        except Exception as exc:
            self.errors.append(f"bad client assertion: {type(exc).__name__}")
            return None
        claims = token.claims
        if (
            claims.get("aud") != self.base
            or claims.get("iss") != claims.get("sub")
            or claims.get("exp", 0) < time.time()
        ):
            self.errors.append(f"bad client assertion claims: aud={claims.get('aud')}")
            return None
        return str(claims["iss"])

    def check_proof(
        self, proof: str | None, method: str, url: str, path: str, access_token: str | None = None
    ) -> tuple[str | None, str | None]:
        """(the proof key's thumbprint, None) for a valid RFC 9449 proof; else (None, what is wrong)."""
        if not proof:
            return None, "no DPoP proof"
        try:
            header = jws.extract_compact(proof.encode()).protected
            key = ECKey.import_key(header["jwk"])
            claims = jwt.decode(proof, key, algorithms=["ES256"]).claims
        except Exception as exc:
            return None, f"unreadable proof ({type(exc).__name__})"
        digest = hashlib.sha256((access_token or "").encode()).digest()
        expected = {
            "typ": header.get("typ") == "dpop+jwt",
            "no private key": "d" not in header["jwk"],
            "jti": isinstance(claims.get("jti"), str)
            and all(claims["jti"] != c.get("jti") for _, c in self.dpop_proofs),
            "htm": claims.get("htm") == method,
            "htu": claims.get("htu") == url,
            "iat": abs(time.time() - float(claims.get("iat", 0))) < 300,
            "ath": access_token is None
            or claims.get("ath") == base64.urlsafe_b64encode(digest).rstrip(b"=").decode(),
        }
        wrong = [name for name, good in expected.items() if not good]
        if wrong:
            return None, f"proof with wrong {wrong}"
        if self.dpop_nonce is not None and claims.get("nonce") != self.dpop_nonce:
            return None, "use_dpop_nonce"
        self.dpop_proofs.append((path, claims))
        return key.thumbprint(), None

    def _issue(self, scope: tuple[str, ...], client_id: str, jkt: str | None = None) -> dict[str, Any]:
        scope = tuple(s for s in scope if s not in self.withhold_scopes)
        token = "at-" + secrets.token_urlsafe(16)
        self.secrets_issued.append(token)
        self.access[token] = (scope, time.time() + self.token_lifetime)
        if jkt is not None:
            self.dpop_bound[token] = jkt
        answer: dict[str, Any] = {
            "access_token": token,
            "token_type": "DPoP" if jkt is not None else "Bearer",
            "expires_in": self.token_lifetime,
        }
        if scope:
            answer["scope"] = " ".join(scope)
        if self.issue_refresh:
            refresh = "rt-" + secrets.token_urlsafe(16)
            self.refresh[refresh] = (client_id, scope)
            self.secrets_issued.append(refresh)
            answer["refresh_token"] = refresh
        return answer

    def _echoed_refusal(self, seen: Seen) -> tuple[int, dict[str, Any]] | None:
        """A refusal whose text repeats the credentials and grants the request sent (a careless server's)."""
        if seen.params.get("grant_type") != self.echo_refusal:
            return None
        sent = " ".join(sent_secrets(seen))
        return 400, {"error": f"invalid_grant {sent}", "error_description": f"rejected: {sent}"}

    def token(self, seen: Seen) -> tuple[Any, ...]:
        echoed = self._echoed_refusal(seen)
        if echoed is not None:
            return echoed
        jkt = None
        if self.dpop and "dpop" in seen.headers:
            jkt, wrong = self.check_proof(seen.headers["dpop"], "POST", f"{self.base}/token", "/token")
            if wrong == "use_dpop_nonce":
                return 400, {"error": "use_dpop_nonce"}, {"dpop-nonce": self.dpop_nonce or ""}
            if wrong is not None:
                self.errors.append(f"token endpoint: {wrong}")
                return 400, {"error": "invalid_dpop_proof"}
        params = seen.params
        if (
            params.get("grant_type") == JWT_BEARER
            and "client_id" not in params
            and not seen.headers.get("authorization")
        ):  # workload identity: the assertion alone
            if params.get("assertion") not in self.workload_assertions:
                return 400, {"error": "invalid_grant", "error_description": "unknown workload"}
            return 200, self._issue(tuple(params.get("scope", "").split()), "workload", jkt)
        client = self._client_of(seen)
        if client is None:
            self.errors.append("client authentication failed")
            return 401, {"error": "invalid_client"}
        if not params.get("resource"):
            self.errors.append("token request without resource")
        grant_type = params.get("grant_type")
        if grant_type == "authorization_code":
            grant = self.codes.pop(params.get("code", ""), None)
            if grant is None or grant.client_id != client:
                return 400, {
                    "error": "invalid_grant",
                    "error_description": f"unknown code {params.get('code')}",
                }
            digest = hashlib.sha256(params.get("code_verifier", "").encode()).digest()
            if (
                base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != grant.challenge
                or grant.method != "S256"
            ):
                self.errors.append("PKCE verifier does not match")
                return 400, {"error": "invalid_grant", "error_description": "PKCE"}
            if params.get("redirect_uri") != grant.redirect_uri:
                self.errors.append("redirect_uri differs from the authorization request")
                return 400, {"error": "invalid_grant"}
            if params.get("resource") != grant.resource:
                self.errors.append("resource differs from the authorization request")
            return 200, self._issue(grant.scope, client, jkt)
        if grant_type == "refresh_token":
            known = self.refresh.pop(params.get("refresh_token", ""), None)
            if known is None or known[0] != client:
                return 400, {"error": "invalid_grant"}
            return 200, self._issue(known[1], client, jkt)
        if grant_type == "client_credentials":
            return 200, self._issue(tuple(params.get("scope", "").split()), client, jkt)
        if grant_type == JWT_BEARER:
            if params.get("assertion") not in self.issued_grants:
                return 400, {"error": "invalid_grant"}
            return 200, self._issue(tuple(params.get("scope", "").split()), client, jkt)
        return 400, {"error": "unsupported_grant_type"}

    def idp_token(self, seen: Seen) -> tuple[int, dict[str, Any]]:
        echoed = self._echoed_refusal(seen)
        if echoed is not None:
            return echoed
        params = seen.params
        expected = {
            "grant_type": TOKEN_EXCHANGE,
            "requested_token_type": ID_JAG,
            "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
            "subject_token": self.idp_id_token,
            "audience": self.base,
            "resource": self.url,
        }
        wrong = [name for name, value in expected.items() if params.get(name) != value]
        if wrong:
            self.errors.append(f"token exchange: wrong {wrong}")
            return 400, {"error": "invalid_request"}
        grant = "jag-" + secrets.token_urlsafe(16)
        self.issued_grants.add(grant)
        self.secrets_issued.append(grant)
        return 200, {"access_token": grant, "issued_token_type": ID_JAG, "token_type": "N_A"}

    # --- authorization endpoint -------------------------------------------------------------------

    def authorize(self, seen: Seen) -> tuple[int, dict[str, str]]:
        params = seen.params
        client_id = params.get("client_id", "")
        redirect_uri = params.get("redirect_uri", "")
        registered = self.clients.get(client_id)
        if registered is not None and redirect_uri not in registered["redirect_uris"]:
            self.errors.append("redirect_uri not registered")
            return 400, {}
        if self.login_page:
            return 200, {}
        code = "code-" + secrets.token_urlsafe(16)
        self.secrets_issued.append(code)
        self.codes[code] = Grant(
            client_id,
            redirect_uri,
            params.get("code_challenge", ""),
            params.get("code_challenge_method", ""),
            tuple(params.get("scope", "").split()),
            params.get("resource"),
        )
        answer = {"code": code, "state": "forged" if self.wrong_state else params.get("state", "")}
        if self.iss_in_response == "right":
            answer["iss"] = self.base
        elif self.iss_in_response == "wrong":
            answer["iss"] = "https://attacker.example"
        return 302, {"location": f"{redirect_uri}?{urlencode(answer)}"}


def _handler(server: OAuthServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # each write goes out at once, as a real server's would

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            if body is not None:
                self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _send_inflating(self, status: int, size: int, challenge: str) -> None:
            """A gzip body of ``size`` zero bytes (a small download, a big inflation), ending with the
            connection, written as far as the client reads."""
            self.send_response(status)
            self.send_header("www-authenticate", challenge)
            self.send_header("content-encoding", "gzip")
            self.send_header("connection", "close")
            self.end_headers()
            self.close_connection = True
            packer = zlib.compressobj(wbits=zlib.MAX_WBITS | 16)
            piece = bytes(1024 * 1024)
            try:
                for _ in range(size // len(piece)):
                    self.wfile.write(packer.compress(piece))
                self.wfile.write(packer.flush())
            except OSError:
                pass  # the client hung up

        def _record(self, params: dict[str, Any]) -> Seen:
            seen = Seen(
                self.command,
                urlsplit(self.path).path,
                params,
                {k.lower(): v for k, v in self.headers.items()},
            )
            with server._lock:
                server.log.append(seen)
            return seen

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            seen = self._record(dict(parse_qsl(parts.query)))
            if seen.path == "/.well-known/oauth-protected-resource/mcp":
                self._send(200, server.prm())
            elif seen.path == "/.well-known/oauth-authorization-server":
                self._send(200, server.as_metadata())
            elif seen.path == "/authorize":
                status, headers = server.authorize(seen)
                self._send(status, None, headers)
            elif seen.path == "/mcp":
                self._send(405)
            else:
                self._send(404, {"error": "not_found"})

        def do_DELETE(self) -> None:
            self._record({})
            self._send(200)

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            raw = self.rfile.read(length).decode()
            path = urlsplit(self.path).path
            if path in ("/register", "/mcp"):
                seen = self._record(json.loads(raw) if raw else {})
            else:
                seen = self._record({k: v[0] for k, v in parse_qs(raw).items()})
            with server._lock:
                if path == "/register":
                    self._register(seen)
                elif path == "/token":
                    self._send(*server.token(seen))
                elif path == "/idp/token":
                    self._send(*server.idp_token(seen))
                elif path == "/mcp":
                    self._mcp(seen)
                else:
                    self._send(404, {"error": "not_found"})

        def _register(self, seen: Seen) -> None:
            if not server.registration:
                self._send(404)
                return
            ident = "dyn-" + secrets.token_urlsafe(8)
            method = seen.params.get("token_endpoint_auth_method", "client_secret_basic")
            record = {
                "client_id": ident,
                "redirect_uris": seen.params.get("redirect_uris", []),
                "token_endpoint_auth_method": method,
            }
            if method != "none":
                record["client_secret"] = "sec-" + secrets.token_urlsafe(16)
                server.secrets_issued.append(record["client_secret"])
            server.clients[ident] = record
            self._send(201, record)

        def _mcp(self, seen: Seen) -> None:
            message = seen.params
            scheme, _, token = seen.headers.get("authorization", "").partition(" ")
            if scheme == "DPoP" and token in server.dpop_bound:
                jkt, wrong = server.check_proof(seen.headers.get("dpop"), "POST", server.url, "/mcp", token)
                if wrong == "use_dpop_nonce":
                    refusal = {
                        "www-authenticate": 'DPoP error="use_dpop_nonce"',
                        "dpop-nonce": server.dpop_nonce or "",
                    }
                    self._send(401, {"error": "use_dpop_nonce"}, refusal)
                    return
                if wrong is not None or jkt != server.dpop_bound[token]:
                    server.errors.append(f"MCP request: {wrong or 'a proof by another key'}")
                    token = ""
            elif scheme != "Bearer" or token in server.dpop_bound:
                if token in server.dpop_bound:
                    server.errors.append("a DPoP-bound token sent as a Bearer token")
                token = ""
            known = server.access.get(token)
            if known is None or known[1] < time.time():
                if server.unauthorized_body:
                    self._send_inflating(401, server.unauthorized_body, server.challenge(scope=None))
                    return
                self._send(
                    401,
                    {"error": "invalid_token"},
                    {"www-authenticate": server.challenge(scope=server.challenge_scope)},
                )
                return
            method = message.get("method")
            if method == "tools/call" and not set(server.call_scopes) <= set(known[0]):
                challenge = server.challenge(error="insufficient_scope", scope=" ".join(server.call_scopes))
                self._send(403, {"error": "insufficient_scope"}, {"www-authenticate": challenge})
                return
            if "id" not in message:
                self._send(202)
                return
            if method == "initialize":
                result: dict[str, Any] = {
                    "protocolVersion": message["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "oauth-test", "version": "1"},
                }
            elif method == "tools/call":
                result = {"content": [{"type": "text", "text": "called"}]}
            else:
                result = {}
            self._send(200, {"jsonrpc": "2.0", "id": message["id"], "result": result})

    return Handler
