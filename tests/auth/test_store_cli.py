"""Token stores, and the CLI contract: tokens that survive a run, ``auth list|logout``, option errors."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import keyring
import keyring.backend
import keyring.backends.chainer
import keyring.backends.fail
import keyring.backends.null
import keyring.errors
import pytest

from host_receiver.auth import (
    ClientCredentialsGrant,
    EnterpriseGrant,
    FileTokenStore,
    KeyringTokenStore,
    MemoryTokenStore,
    RegisteredClient,
    StoredAuthorization,
    TokenSet,
    _store,
    default_token_store,
)
from host_receiver.cli import build_parser
from host_receiver.cli._auth import (
    ASSERTION_ENV,
    CLIENT_SECRET_ENV,
    ID_TOKEN_ENV,
    AuthOptionsError,
    build_auth,
)
from host_receiver.errors import AuthError
from tests.auth.server import JWT_BEARER, OAuthServer
from tests.cli_command import run_cli
from tests.interop import PY2_SERVER, http_server, peer_python
from tests.providers.keyring_backends import FILE_ENV, MemoryKeyring, PlaintextKeyring, memory_keyring

__all__ = ["memory_keyring"]

ROOT = Path(__file__).resolve().parents[2]


def entry(server: str = "https://mcp.example/mcp", issuer: str = "https://as.example") -> StoredAuthorization:
    return StoredAuthorization(
        server,
        issuer,
        tokens=TokenSet("at-secret-value", expires_at=None, refresh_token="rt-secret-value", scope=("a",)),
        client=RegisteredClient("dyn-1", "cs-secret-value", redirect_uris=("http://127.0.0.1:1/callback",)),
    )


SECRETS = ("at-secret-value", "rt-secret-value", "cs-secret-value")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """The store tests run on both (keyring and file access go through worker threads)."""
    return str(request.param)


# --- stores --------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_file_store_writes_0600_and_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "tokens.json"
    store = FileTokenStore(path)
    await store.save(entry())
    await store.save(entry(issuer="https://other.example"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    loaded = await FileTokenStore(path).load("https://mcp.example/mcp")
    assert {e.issuer for e in loaded} == {"https://as.example", "https://other.example"}
    assert loaded[0].tokens is not None and loaded[0].tokens.refresh_token == "rt-secret-value"
    assert not any(secret in repr(loaded) + loaded[0].summary() for secret in SECRETS)
    assert [e.issuer for e in await store.delete("https://mcp.example/mcp")] != []
    assert await store.entries() == []


@pytest.mark.anyio
async def test_the_file_store_refuses_a_file_others_can_read(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    await FileTokenStore(path).save(entry())
    path.chmod(0o644)
    with pytest.raises(AuthError, match="mode 0600"):
        await FileTokenStore(path).load("https://mcp.example/mcp")
    with pytest.raises(AuthError, match="chmod 600"):
        await FileTokenStore(path).save(entry())


@pytest.mark.anyio
async def test_the_keyring_store_keeps_entries_and_an_index(memory_keyring: MemoryKeyring) -> None:
    store = KeyringTokenStore()
    await store.save(entry())
    await store.save(entry(server="https://second.example/mcp"))
    names = {name for service, name in memory_keyring.passwords if service == "host-receiver-oauth"}
    assert names == {
        "index",
        "https://mcp.example/mcp https://as.example",
        "https://second.example/mcp https://as.example",
    }
    assert [e.server for e in await store.entries()] == [
        "https://second.example/mcp",
        "https://mcp.example/mcp",
    ]
    [first] = await KeyringTokenStore().load("https://mcp.example/mcp")
    assert first.client is not None and first.client.client_secret == "cs-secret-value"
    assert [e.server for e in await store.delete("https://mcp.example/mcp")] == ["https://mcp.example/mcp"]
    assert [e.server for e in await store.entries()] == ["https://second.example/mcp"]
    await store.delete()
    assert memory_keyring.passwords == {}


@contextlib.contextmanager
def keyring_backend(backend: keyring.backend.KeyringBackend) -> Iterator[None]:
    """``backend`` as the keyring for the block; the previous one is restored after."""
    previous = keyring.get_keyring()
    keyring.set_keyring(backend)
    try:
        yield
    finally:
        keyring.set_keyring(previous)


class _LockedKeyring(MemoryKeyring):
    def set_password(self, service: str, username: str, password: str) -> None:
        raise keyring.errors.KeyringLocked("locked")


@pytest.fixture
def fresh_warnings() -> Iterator[None]:
    saved = set(_store._warned)
    _store._warned.clear()
    yield
    _store._warned.clear()
    _store._warned.update(saved)


@pytest.mark.anyio
@pytest.mark.usefixtures("fresh_warnings")
async def test_a_locked_keyring_warns_once_and_keeps_tokens_in_memory(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with keyring_backend(_LockedKeyring()):
        store = KeyringTokenStore()
        await store.save(entry())
        await store.save(entry(issuer="https://b.example"))
        assert len(await store.load("https://mcp.example/mcp")) == 2
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "in memory for this run only" in warnings[0].getMessage()


class _UnreadableKeyring(MemoryKeyring):
    def get_password(self, service: str, username: str) -> str | None:
        raise keyring.errors.KeyringLocked("locked")


@pytest.mark.anyio
async def test_listing_or_removing_from_an_unreadable_keyring_is_a_clear_error() -> None:
    with keyring_backend(_UnreadableKeyring()):
        with pytest.raises(AuthError, match=r"cannot read the OS keyring \(KeyringLocked\)"):
            await KeyringTokenStore().entries()
        with pytest.raises(AuthError, match=r"cannot change the OS keyring \(KeyringLocked\)"):
            await KeyringTokenStore().delete()


@pytest.mark.anyio
async def test_with_a_keyring_the_default_store_is_the_keyring(memory_keyring: MemoryKeyring) -> None:
    assert isinstance(await default_token_store(), KeyringTokenStore)


class _Chain(keyring.backends.chainer.ChainerBackend):
    """keyring's chain of backends over the given ones (never picked by keyring's discovery)."""

    viable = False

    def __init__(self, *backends: keyring.backend.KeyringBackend) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.chain = list(backends)

    @property
    def backends(self) -> list[keyring.backend.KeyringBackend]:
        return self.chain


UNFIT_BACKENDS: dict[str, tuple[Callable[[], keyring.backend.KeyringBackend], str]] = {
    "fail": (keyring.backends.fail.Keyring, "no OS keyring is available"),
    "null": (
        keyring.backends.null.Keyring,
        "the keyring backend keyring.backends.null.Keyring keeps nothing",
    ),
    "plaintext": (
        PlaintextKeyring,
        "the keyring backend tests.providers.keyring_backends.PlaintextKeyring stores secrets unencrypted",
    ),
    "chain-plaintext-first": (
        lambda: _Chain(PlaintextKeyring(), MemoryKeyring()),
        "PlaintextKeyring stores secrets unencrypted",
    ),
}


@pytest.mark.anyio
@pytest.mark.usefixtures("fresh_warnings")
@pytest.mark.parametrize("kind", UNFIT_BACKENDS)
async def test_without_a_fit_keyring_the_default_store_is_memory_with_one_warning(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """No backend, one that drops secrets, or one that writes them in clear text: memory, one warning
    once a token would be kept."""
    make, reason = UNFIT_BACKENDS[kind]
    with keyring_backend(make()):
        first, second = await default_token_store(), await default_token_store()
    assert isinstance(first, MemoryTokenStore) and isinstance(second, MemoryTokenStore)
    assert await first.load("https://mcp.example/mcp") == []
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]  # nothing kept yet: no warning
    for store in (first, second):
        await store.save(entry())
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert reason in warning and "in memory for this run only" in warning and "--auth-token-file" in warning


@pytest.mark.anyio
async def test_a_chain_that_writes_to_a_real_keyring_first_is_the_keyring(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(FILE_ENV, str(tmp_path / "keyring.json"))
    with keyring_backend(_Chain(MemoryKeyring(), PlaintextKeyring())):
        assert isinstance(await default_token_store(), KeyringTokenStore)


# --- CLI options -----------------------------------------------------------------------------------


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["run", "--url", "https://mcp.example/mcp", *argv])


def test_the_client_secret_comes_from_the_environment_when_not_given() -> None:
    auth = build_auth(
        parse("--auth-client-id", "c", "--auth-grant", "client-credentials"),
        {"HOST_RECEIVER_CLIENT_SECRET": "s3"},
    )
    assert isinstance(auth.grant, ClientCredentialsGrant)
    assert auth.client is not None and auth.client.client_secret == "s3"
    assert "s3" not in repr(auth) and "s3" not in repr(auth.client)


def test_the_id_jag_grant_takes_the_id_token_from_the_environment() -> None:
    args = parse(
        "--auth-grant", "id-jag", "--auth-client-id", "c", "--auth-idp-token-endpoint", "https://idp.example/token",
        "--auth-idp-client-id", "idp-c",
    )  # fmt: skip
    auth = build_auth(args, {"HOST_RECEIVER_ID_TOKEN": "idt"})
    assert isinstance(auth.grant, EnterpriseGrant) and auth.grant.idp.id_token == "idt"


def test_dpop_is_automatic_unless_asked_for() -> None:
    assert build_auth(parse(), {}).dpop is None  # used when the authorization server offers it
    assert build_auth(parse("--auth-dpop"), {}).dpop is True


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--auth-grant", "id-jag"],
            "--auth-client-id, --auth-id-token (or $HOST_RECEIVER_ID_TOKEN), --auth-idp",
        ),
        (["--auth-grant", "client-credentials", "--auth-client-id", "c"], "a secret"),
        (["--auth-client-secret", "s"], "go with --auth-client-id"),
        (["--auth-grant", "jwt-bearer"], "needs --auth-assertion FILE or $HOST_RECEIVER_ASSERTION"),
        (["--auth-assertion", "/some/file"], "--auth-assertion goes with --auth-grant jwt-bearer"),
        (["--auth-client-metadata-url", "http://c.example/m.json"], "https with a path"),
        (
            ["--auth-client-id", "c", "--auth-client-key", "/nonexistent/key.pem"],
            "cannot read --auth-client-key",
        ),
    ],
)
def test_inconsistent_options_are_usage_errors(argv: list[str], message: str) -> None:
    with pytest.raises(
        AuthOptionsError, match=message.replace("$", r"\$").replace("(", r"\(").replace(")", r"\)")
    ):
        build_auth(parse(*argv), {})


# --- the CLI, run as a user runs it ------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[OAuthServer]:
    with OAuthServer() as running:
        yield running


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HOST_RECEIVER_CONFIG": str(tmp_path / "absent-config.toml"),
        "PYTHONPATH": str(ROOT),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
    }


def call_args(server: OAuthServer, *more: str) -> list[str]:
    return ["run", "--url", server.url, "--call", "t", "--auth-browser", "none", *more]


@pytest.mark.slow
def test_tokens_in_a_token_file_survive_the_run_and_refresh_before_reauthorizing(
    server: OAuthServer, env: dict[str, str], tmp_path: Path
) -> None:
    tokens = tmp_path / "tokens.json"
    first = run_cli(env, *call_args(server, "--auth-token-file", str(tokens)))
    assert first.returncode == 0, first.stderr
    assert '"called"' in first.stdout
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
    second = run_cli(env, *call_args(server, "--auth-token-file", str(tokens)))
    assert second.returncode == 0, second.stderr
    assert len(server.seen("/authorize")) == 1
    assert len(server.token_requests()) == 1  # the stored token was used
    server.revoke_access_tokens()
    third = run_cli(env, *call_args(server, "--auth-token-file", str(tokens)))
    assert third.returncode == 0, third.stderr
    assert len(server.seen("/authorize")) == 1  # refreshed, not authorized again
    assert len(server.token_requests("refresh_token")) == 1
    assert len(server.seen("/register")) == 1  # the registered client was kept too

    listing = run_cli(env, "auth", "list", "--auth-token-file", str(tokens))
    assert listing.returncode == 0, listing.stderr
    assert listing.stdout.startswith(f"{server.url}, issuer {server.base}, registered client dyn-")
    assert "refresh token" in listing.stdout
    everything = first.stdout + first.stderr + second.stderr + third.stderr + listing.stdout + listing.stderr
    assert not [value for value in server.secrets_issued if value in everything]

    logout = run_cli(env, "auth", "logout", server.url + "/", "--auth-token-file", str(tokens))
    assert logout.stdout == f"removed {server.url} (issuer {server.base})\n"
    listed = run_cli(env, "auth", "list", "--auth-token-file", str(tokens))
    assert listed.stdout == "no stored authorizations\n"


@pytest.mark.slow
def test_tokens_in_the_keyring_survive_the_run_and_refresh_before_reauthorizing(
    server: OAuthServer, env: dict[str, str], tmp_path: Path
) -> None:
    env = {
        **env,
        "PYTHON_KEYRING_BACKEND": "tests.providers.keyring_backends.FileKeyring",
        FILE_ENV: str(tmp_path / "keyring.json"),
    }
    for _ in range(2):
        run = run_cli(env, *call_args(server))
        assert run.returncode == 0, run.stderr
        assert "keyring" not in run.stderr
    assert len(server.seen("/authorize")) == 1
    assert len(server.token_requests()) == 1  # the second run used the stored token
    server.revoke_access_tokens()
    third = run_cli(env, *call_args(server))
    assert third.returncode == 0, third.stderr
    assert (
        len(server.seen("/authorize")) == 1
    )  # refreshed with the stored refresh token, not authorized again
    assert len(server.token_requests("refresh_token")) == 1
    assert len(server.seen("/register")) == 1  # the registered client came from the keyring too
    assert "host-receiver-oauth/index" in (tmp_path / "keyring.json").read_text()
    assert run_cli(env, "auth", "list").stdout.startswith(server.url)
    assert run_cli(env, "auth", "logout").stdout.startswith(f"removed {server.url}")
    assert run_cli(env, "auth", "list").stdout == "no stored authorizations\n"


@pytest.mark.slow
@pytest.mark.parametrize("grant", ["client-credentials", "id-jag"])
def test_the_client_secret_and_id_token_options_reach_the_servers(
    server: OAuthServer, env: dict[str, str], grant: str
) -> None:
    """--auth-client-secret and --auth-id-token are used, and win over their variables."""
    secret, id_token = "flag-secret-" + "s" * 16, "flag-id-token-" + "t" * 16
    server.pre_registered, server.auth_methods = {"svc": secret}, ["client_secret_basic"]
    server.grant_types, server.idp_id_token = ["client_credentials", JWT_BEARER], id_token
    env = {**env, CLIENT_SECRET_ENV: "not-" + secret, ID_TOKEN_ENV: "not-" + id_token}
    options = ["--auth-grant", grant, "--auth-client-id", "svc", "--auth-client-secret", secret]
    if grant == "id-jag":
        options += ["--auth-id-token", id_token, "--auth-idp-token-endpoint", f"{server.base}/idp/token"]
        options += ["--auth-idp-client-id", "idp-client"]
    run = run_cli(env, "run", "--url", server.url, "--call", "t", *options)
    assert run.returncode == 0, run.stderr
    assert '"called"' in run.stdout and server.errors == []
    [token] = server.token_requests("client_credentials" if grant == "client-credentials" else JWT_BEARER)
    assert token.headers["authorization"].startswith("Basic ")  # the server checked the flag's secret
    assert len(server.seen("/idp/token")) == (1 if grant == "id-jag" else 0)  # it checked the ID token
    assert secret not in run.stdout + run.stderr and id_token not in run.stdout + run.stderr


@pytest.mark.slow
def test_workload_identity_from_a_file_or_the_environment_reaches_the_server(
    server: OAuthServer, env: dict[str, str], tmp_path: Path
) -> None:
    """--auth-grant jwt-bearer: the file wins over $HOST_RECEIVER_ASSERTION; no client, no browser."""
    workload_jwt = "wl-" + "j" * 24
    server.workload_assertions = {workload_jwt}
    (tmp_path / "workload.jwt").write_text(workload_jwt + "\n")
    for options, extra in (
        (["--auth-assertion", str(tmp_path / "workload.jwt")], {ASSERTION_ENV: "stale"}),
        ([], {ASSERTION_ENV: workload_jwt}),
    ):
        run = run_cli(
            {**env, **extra},
            "run",
            "--url",
            server.url,
            "--call",
            "t",
            "--auth-grant",
            "jwt-bearer",
            *options,
        )
        assert run.returncode == 0, run.stderr
        assert '"called"' in run.stdout and workload_jwt not in run.stdout + run.stderr
    assert [seen.params["assertion"] for seen in server.token_requests(JWT_BEARER)] == [workload_jwt] * 2
    assert server.seen("/authorize") == [] and server.seen("/register") == []


@pytest.mark.slow
def test_without_a_keyring_the_cli_warns_once_and_writes_no_file(
    server: OAuthServer, env: dict[str, str], tmp_path: Path
) -> None:
    env = {
        **env,
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    run = run_cli(env, *call_args(server))
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("no OS keyring is available") == 1
    assert list(tmp_path.rglob("*")) == []  # nothing written anywhere under the home
    again = run_cli(env, *call_args(server))
    assert again.returncode == 0 and len(server.seen("/authorize")) == 2  # memory only: authorized again


@pytest.mark.slow
def test_without_a_keyring_a_server_without_oauth_gets_no_keyring_warning(env: dict[str, str]) -> None:
    with http_server([str(peer_python("py2")), str(PY2_SERVER)]) as url:
        run = run_cli(env, "tools", "--url", url)
    assert run.returncode == 0, run.stderr
    assert "whoami" in run.stdout
    assert "keyring" not in run.stderr and "kept in memory" not in run.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("backend", "reason"),
    [
        ("keyring.backends.null.Keyring", "keeps nothing"),
        ("tests.providers.keyring_backends.PlaintextKeyring", "stores secrets unencrypted"),
    ],
)
def test_a_null_or_plain_text_keyring_gets_no_token_and_the_cli_says_so(
    server: OAuthServer, env: dict[str, str], tmp_path: Path, backend: str, reason: str
) -> None:
    keyring_file = tmp_path / "keyring.json"
    env = {**env, "PYTHON_KEYRING_BACKEND": backend, FILE_ENV: str(keyring_file)}
    for _ in range(2):
        run = run_cli(env, *call_args(server))
        assert run.returncode == 0, run.stderr
        assert run.stderr.count(f"the keyring backend {backend} {reason}") == 1
        assert "OAuth tokens are kept in memory for this run only" in run.stderr
    assert not keyring_file.exists()  # nothing written in clear text
    assert len(server.seen("/authorize")) == 2  # memory only: authorized again


@pytest.mark.slow
@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--auth-client-id", "c"], "--auth-client-id goes with --url"),
        (
            ["--auth-browser", "system", "--auth-token-file", "t.json"],
            "--auth-browser, --auth-token-file go with",
        ),
    ],
)
def test_auth_options_with_a_stdio_server_are_a_usage_error(
    env: dict[str, str], tmp_path: Path, options: list[str], message: str
) -> None:
    marker = tmp_path / "server-started"
    server = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    run = run_cli(env, "run", *options, "--call", "t", "--", *server)
    assert run.returncode == 2
    assert f"host-receiver run: {message}" in run.stderr and "not a stdio server" in run.stderr
    assert not marker.exists()  # refused before anything started


@pytest.mark.slow
def test_an_auth_failure_is_a_clear_connection_error(server: OAuthServer, env: dict[str, str]) -> None:
    server.prm_resource = "https://evil.example/mcp"
    run = run_cli(env, *call_args(server))
    assert run.returncode == 2
    assert f"could not connect to {server.url}: the protected resource metadata" in run.stderr
    assert "refusing to authorize" in run.stderr
