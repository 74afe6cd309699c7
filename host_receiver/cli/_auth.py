"""The CLI's OAuth glue: ``run --url`` options, the ``httpx.Auth`` they make, ``auth list|logout``.

The names here are a public contract (docs/authorization.md):

- ``run`` options: ``--auth-browser system|none``, ``--auth-client-metadata-url URL``,
  ``--auth-client-id ID``, ``--auth-client-secret SECRET`` (else
  ``$HOST_RECEIVER_CLIENT_SECRET``),
  ``--auth-grant code|client-credentials|id-jag|jwt-bearer``,
  ``--auth-client-key PEM_FILE``, ``--auth-id-token TOKEN`` (else
  ``$HOST_RECEIVER_ID_TOKEN``), ``--auth-idp-token-endpoint URL``,
  ``--auth-idp-client-id ID``, ``--auth-assertion FILE`` (else
  ``$HOST_RECEIVER_ASSERTION``, the JWT itself; for ``jwt-bearer``), ``--auth-dpop``; and ours:
  ``--auth-token-file PATH`` (keep tokens in a 0600 file instead of the OS keyring) and
  ``--auth-redirect-uri URI`` (a
  fixed loopback redirect URI, for a pre-registered client).
- :func:`build_auth` turns them into the :class:`~host_receiver.auth.OAuth` of
  ``run --url``; it starts by itself on the server's first 401. Inconsistent
  options raise :class:`AuthOptionsError` (a usage error). They go with
  ``--url`` only: :func:`auth_options_given` names those on a command line
  (each defaults to None, so an option given with its default value counts),
  and ``run`` refuses them for a stdio server.
- ``host-receiver auth list`` shows what is stored (never a token or secret);
  ``host-receiver auth logout [SERVER]`` removes it, for one server or all.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

import anyio

from host_receiver.auth import (
    AuthorizationCodeGrant,
    Browser,
    ClientCredentialsGrant,
    EnterpriseGrant,
    EnterpriseIdp,
    FileTokenStore,
    Grant,
    HeadlessBrowser,
    OAuth,
    PreRegisteredClient,
    SystemBrowser,
    TokenStore,
    WorkloadIdentityGrant,
    canonical_resource,
    default_token_store,
)
from host_receiver.errors import AuthError
from host_receiver.sanitize import safe_text

__all__ = [
    "ASSERTION_ENV",
    "CLIENT_SECRET_ENV",
    "ID_TOKEN_ENV",
    "AuthOptionsError",
    "add_auth_command",
    "add_auth_options",
    "auth_options_given",
    "build_auth",
]

CLIENT_SECRET_ENV = "HOST_RECEIVER_CLIENT_SECRET"
ID_TOKEN_ENV = "HOST_RECEIVER_ID_TOKEN"
ASSERTION_ENV = "HOST_RECEIVER_ASSERTION"


class AuthOptionsError(ValueError):
    """The ``--auth-*`` options do not fit together."""


def _add_store_option(parser: argparse._ActionsContainer) -> None:
    parser.add_argument(
        "--auth-token-file",
        metavar="PATH",
        help="keep OAuth tokens in this file (created with mode 0600) instead of the OS keyring",
    )


def add_auth_options(run_parser: argparse.ArgumentParser) -> None:
    """The ``--auth-*`` options of ``run`` (used with ``--url``)."""
    group = run_parser.add_argument_group(
        "authorization (--url servers behind OAuth; starts by itself on HTTP 401)"
    )
    group.add_argument(
        "--auth-browser",
        choices=["system", "none"],
        help="'system' opens your browser and takes the code on a loopback redirect; 'none' fetches "
        "the authorization URL itself (headless: for servers that grant without a person) "
        "(default: system)",
    )
    group.add_argument(
        "--auth-client-metadata-url",
        metavar="URL",
        help="the https URL of this client's metadata document, used as client_id when the "
        "authorization server supports client ID metadata documents",
    )
    group.add_argument("--auth-client-id", metavar="ID", help="a client pre-registered with the server")
    group.add_argument(
        "--auth-client-secret",
        metavar="SECRET",
        help=f"the pre-registered client's secret (default: ${CLIENT_SECRET_ENV}; prefer the variable, "
        "a command line is visible to other users)",
    )
    group.add_argument(
        "--auth-grant",
        choices=["code", "client-credentials", "id-jag", "jwt-bearer"],
        help="'code': a person authorizes in a browser; 'client-credentials': the client acts for "
        "itself (secret or --auth-client-key); 'id-jag': enterprise-managed authorization with "
        "an ID token from your identity provider; 'jwt-bearer': workload identity, the JWT your "
        "platform issued this workload (--auth-assertion) (default: code)",
    )
    group.add_argument(
        "--auth-dpop",
        action="store_const",
        const=True,
        help="bind tokens to a key of this client's (DPoP, RFC 9449) even when the authorization "
        "server does not advertise it (default: when it does)",
    )
    group.add_argument(
        "--auth-assertion",
        metavar="FILE",
        help=f"the file holding the workload's JWT for --auth-grant jwt-bearer, read again for every "
        f"token request (default: the JWT in ${ASSERTION_ENV})",
    )
    group.add_argument(
        "--auth-client-key",
        metavar="PEM_FILE",
        help="the pre-registered client's private key (PEM) for private_key_jwt authentication",
    )
    group.add_argument(
        "--auth-id-token",
        metavar="TOKEN",
        help=f"the ID token for --auth-grant id-jag (default: ${ID_TOKEN_ENV})",
    )
    group.add_argument(
        "--auth-idp-token-endpoint",
        metavar="URL",
        help="the identity provider's token endpoint, for --auth-grant id-jag",
    )
    group.add_argument(
        "--auth-idp-client-id", metavar="ID", help="this client's id at the identity provider (id-jag)"
    )
    group.add_argument(
        "--auth-redirect-uri",
        metavar="URI",
        help="a fixed loopback redirect URI (http://127.0.0.1:PORT/PATH), e.g. the one registered "
        "for a pre-registered client (default: a free port, or the one used before)",
    )
    _add_store_option(group)


def auth_options_given(args: argparse.Namespace) -> list[str]:
    """The ``--auth-*`` options of ``run`` on the command line, in the order of ``--help``."""
    return [
        f"--{name.replace('_', '-')}"
        for name, value in vars(args).items()
        if name.startswith("auth_") and value is not None
    ]


def _store(args: argparse.Namespace) -> TokenStore | None:
    path = getattr(args, "auth_token_file", None)
    return FileTokenStore(path) if path else None


def _read_key(path: str) -> str:
    try:
        return Path(path).expanduser().read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise AuthOptionsError(f"cannot read --auth-client-key {path}: {type(exc).__name__}") from None


def build_auth(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> OAuth:
    """The OAuth auth for ``run --url`` from the parsed ``--auth-*`` options."""
    env = os.environ if environ is None else environ
    secret = args.auth_client_secret or env.get(CLIENT_SECRET_ENV) or None
    key = _read_key(args.auth_client_key) if args.auth_client_key else None
    client: PreRegisteredClient | None = None
    if args.auth_client_id:
        client = PreRegisteredClient(args.auth_client_id, client_secret=secret, private_key_pem=key)
    elif args.auth_client_secret or args.auth_client_key:
        raise AuthOptionsError("--auth-client-secret and --auth-client-key go with --auth-client-id")
    grant: Grant
    if args.auth_grant in (None, "code"):
        browser: Browser
        if args.auth_browser == "none":
            browser = HeadlessBrowser(args.auth_redirect_uri)
        else:
            browser = SystemBrowser(args.auth_redirect_uri)
        grant = AuthorizationCodeGrant(browser)
    elif args.auth_grant == "client-credentials":
        if client is None or not (secret or key):
            raise AuthOptionsError(
                "--auth-grant client-credentials needs --auth-client-id and a secret "
                f"(--auth-client-secret or ${CLIENT_SECRET_ENV}) or --auth-client-key"
            )
        grant = ClientCredentialsGrant()
    elif args.auth_grant == "jwt-bearer":
        grant = _workload_identity(args.auth_assertion, env.get(ASSERTION_ENV) or None)
    else:
        id_token = args.auth_id_token or env.get(ID_TOKEN_ENV) or None
        missing = [
            name
            for name, value in (
                ("--auth-client-id", client),
                (f"--auth-id-token (or ${ID_TOKEN_ENV})", id_token),
                ("--auth-idp-token-endpoint", args.auth_idp_token_endpoint),
                ("--auth-idp-client-id", args.auth_idp_client_id),
            )
            if not value
        ]
        if missing:
            raise AuthOptionsError(f"--auth-grant id-jag needs {', '.join(missing)}")
        assert id_token is not None
        grant = EnterpriseGrant(
            EnterpriseIdp(id_token, args.auth_idp_token_endpoint, args.auth_idp_client_id)
        )
    if args.auth_assertion and args.auth_grant != "jwt-bearer":
        raise AuthOptionsError("--auth-assertion goes with --auth-grant jwt-bearer")
    try:
        return OAuth(
            grant=grant,
            client=client,
            client_metadata_url=args.auth_client_metadata_url,
            store=_store(args),
            dpop=args.auth_dpop,
        )
    except AuthError as exc:
        raise AuthOptionsError(str(exc)) from None


def _workload_identity(path: str | None, from_env: str | None) -> WorkloadIdentityGrant:
    if path:
        return WorkloadIdentityGrant(assertion_file=Path(path).expanduser())
    if from_env:
        return WorkloadIdentityGrant(assertion=from_env)
    raise AuthOptionsError(f"--auth-grant jwt-bearer needs --auth-assertion FILE or ${ASSERTION_ENV}")


# --- host-receiver auth list | logout ----------------------------------------------------------


def add_auth_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``host-receiver auth list`` and ``host-receiver auth logout [SERVER]``."""
    auth = commands.add_parser(
        "auth",
        help="show or remove stored OAuth authorizations",
        description="Show or remove the OAuth tokens host-receiver keeps for servers behind "
        "authorization (in the OS keyring, or in --auth-token-file).",
    )
    actions = auth.add_subparsers(dest="auth_action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="list stored authorizations (no token is shown)")
    _add_store_option(listing)
    listing.set_defaults(func=_list_command)
    logout = actions.add_parser("logout", help="remove stored authorizations")
    logout.add_argument("server", nargs="?", metavar="SERVER", help="the server URL (default: every server)")
    _add_store_option(logout)
    logout.set_defaults(func=_logout_command)


async def _open_store(args: argparse.Namespace) -> TokenStore:
    return _store(args) or await default_token_store()


def _list_command(args: argparse.Namespace) -> int:
    async def run() -> int:
        entries = await (await _open_store(args)).entries()
        if not entries:
            print("no stored authorizations")
        for entry in entries:
            print(safe_text(entry.summary()))
        return 0

    return _guarded(run)


def _logout_command(args: argparse.Namespace) -> int:
    async def run() -> int:
        server = None
        if args.server:
            try:
                server = canonical_resource(args.server)
            except ValueError:
                print(f"host-receiver auth logout: {args.server!r} is not an http(s) URL", file=sys.stderr)
                return 2
        store = await _open_store(args)
        if server is None:
            gone = await store.delete()
        else:  # a trailing slash or the case of the host does not make another server here
            targets = {e.server for e in await store.entries() if e.server.rstrip("/") == server.rstrip("/")}
            gone = [e for target in sorted(targets) for e in await store.delete(target)]
        for entry in gone:
            print(safe_text(f"removed {entry.server} (issuer {entry.issuer})"))
        if not gone:
            print(f"nothing stored for {server}" if server else "no stored authorizations")
        return 0

    return _guarded(run)


def _guarded(run: Callable[[], Awaitable[int]]) -> int:
    try:
        return anyio.run(run)
    except AuthError as exc:
        print(f"host-receiver auth: {exc}", file=sys.stderr)
        return 2
