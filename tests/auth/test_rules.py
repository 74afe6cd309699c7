"""The pure rules: WWW-Authenticate parsing, canonical URIs and well-known URLs, scope selection, quoting."""

from __future__ import annotations

import pytest

from host_receiver.auth import BearerChallenge, canonical_resource, parse_bearer_challenge
from host_receiver.auth._quote import quote, safe_url
from host_receiver.auth._scopes import select_scopes
from host_receiver.auth._urls import (
    as_metadata_urls,
    prm_urls,
    require_loopback_redirect,
    require_secure,
    resource_matches,
)
from host_receiver.errors import InsecureEndpoint


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (
            'Bearer resource_metadata="https://m.example/.well-known/prm", scope="files:read"',
            BearerChallenge("https://m.example/.well-known/prm", ("files:read",)),
        ),
        (
            'Bearer error="insufficient_scope", scope="a  b", error_description="needs \\"b\\""',
            BearerChallenge(None, ("a", "b"), "insufficient_scope", 'needs "b"'),
        ),
        ('Basic realm="x", DPoP algs="ES256", bearer SCOPE=a', BearerChallenge(None, ("a",))),
        ("Negotiate abc==, Bearer realm=x", BearerChallenge()),
        ("Bearer", BearerChallenge()),
        ('Bearer scope="unterminated', BearerChallenge()),
    ],
)
def test_bearer_challenges_are_parsed(header: str, expected: BearerChallenge) -> None:
    assert parse_bearer_challenge([header]) == expected


def test_no_bearer_challenge_is_none() -> None:
    assert parse_bearer_challenge(['Basic realm="x"']) is None
    assert parse_bearer_challenge([]) is None
    assert parse_bearer_challenge(['Basic realm="x"', "Bearer scope=s"]) == BearerChallenge(None, ("s",))


@pytest.mark.parametrize(
    ("url", "canonical"),
    [
        ("HTTPS://MCP.Example.COM:443/", "https://mcp.example.com"),
        ("https://mcp.example.com/mcp?x=1#frag", "https://mcp.example.com/mcp"),
        ("http://localhost:8080/Server/MCP", "http://localhost:8080/Server/MCP"),
        ("https://user:pw@[::1]:8443/mcp", "https://[::1]:8443/mcp"),
    ],
)
def test_canonical_server_uri(url: str, canonical: str) -> None:
    assert canonical_resource(url) == canonical


@pytest.mark.parametrize(
    ("declared", "server", "matches"),
    [
        ("https://m.example/mcp", "https://m.example/mcp", True),
        ("https://m.example", "https://m.example/mcp", True),
        ("https://M.EXAMPLE/", "https://m.example/mcp", True),
        ("https://m.example/public", "https://m.example/public/mcp", True),
        ("https://m.example/pub", "https://m.example/public/mcp", False),
        ("https://m.example/other", "https://m.example/mcp", False),
        ("https://evil.example/mcp", "https://m.example/mcp", False),
        ("http://m.example/mcp", "https://m.example/mcp", False),
        ("https://m.example:8443/mcp", "https://m.example/mcp", False),
        ("not a url", "https://m.example/mcp", False),
    ],
)
def test_resource_match(declared: str, server: str, matches: bool) -> None:
    assert resource_matches(declared, server) is matches


def test_well_known_locations_follow_the_spec_order() -> None:
    assert prm_urls("https://example.com/public/mcp") == [
        "https://example.com/.well-known/oauth-protected-resource/public/mcp",
        "https://example.com/.well-known/oauth-protected-resource",
    ]
    assert prm_urls("https://example.com/") == ["https://example.com/.well-known/oauth-protected-resource"]
    assert as_metadata_urls("https://auth.example.com/tenant1/") == [
        "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
        "https://auth.example.com/.well-known/openid-configuration/tenant1",
        "https://auth.example.com/tenant1/.well-known/openid-configuration",
    ]
    assert as_metadata_urls("https://auth.example.com") == [
        "https://auth.example.com/.well-known/oauth-authorization-server",
        "https://auth.example.com/.well-known/openid-configuration",
    ]


def test_secure_endpoints_and_loopback_redirects() -> None:
    for good in (
        "https://as.example/token",
        "http://127.0.0.1:9/token",
        "http://localhost/t",
        "http://[::1]:1/t",
    ):
        assert require_secure(good, "token endpoint") == good
    for bad in ("http://as.example/token", "http://10.0.0.1/token", "ftp://as.example/t"):
        with pytest.raises(InsecureEndpoint, match="token endpoint"):
            require_secure(bad, "token endpoint")
    assert require_loopback_redirect("http://127.0.0.1:5/cb") == "http://127.0.0.1:5/cb"
    for bad in (
        "https://app.example/cb",
        "http://127.0.0.1.evil.example/cb",
        "myapp://cb",
        "http://127.0.0.1/cb#x",
    ):
        with pytest.raises(InsecureEndpoint, match="redirect URI"):
            require_loopback_redirect(bad)


def test_scope_selection_rules() -> None:
    challenge = BearerChallenge(scope=("files:read",))
    assert select_scopes(challenge, resource_scopes=["a"], server_scopes=None) == ("files:read",)
    assert select_scopes(BearerChallenge(), resource_scopes=["a", "b"], server_scopes=None) == ("a", "b")
    assert (
        select_scopes(None, resource_scopes=None, server_scopes=["offline_access"], want_refresh=True) == ()
    )
    step_up = BearerChallenge(scope=("b", "c"), error="insufficient_scope")
    assert select_scopes(
        step_up, resource_scopes=None, server_scopes=None, previous=("a", "b"), step_up=True
    ) == (
        "a",
        "b",
        "c",
    )
    offered = ["a", "offline_access"]
    assert select_scopes(challenge, resource_scopes=None, server_scopes=offered, want_refresh=True) == (
        "files:read",
        "offline_access",
    )
    assert select_scopes(challenge, resource_scopes=None, server_scopes=offered, want_refresh=False) == (
        "files:read",
    )


def test_server_text_is_escaped_and_bounded() -> None:
    assert quote("line\nforged 2026 INFO x\x1b[31m") == "line\\nforged 2026 INFO x\\x1b[31m"
    assert quote("x" * 1000) == "x" * 200 + "… [1,000 characters]"  # cut, saying how long it was
    # A URL a server named: the providers' rule (no credentials, query or fragment), then escaped.
    assert safe_url("https://u:p@as.example/a\x1b[31mb?code=c#f") == "https://as.example/a\\x1b[31mb"
    assert safe_url("https://as.example:70000/") == "(an invalid URL)"
