"""MCP authorization (2025-11-25 and 2026-07-28) for Streamable HTTP servers behind OAuth.

``HttpTransport(url, auth=OAuth())`` is all a host needs: on a 401 the
:class:`OAuth` auth discovers the server's authorization server, identifies
the client, gets a token (in a browser by default) and sends the request
again. The browser step is a :class:`Browser` the host may implement; tokens
live in a :class:`TokenStore` (the OS keyring by default). docs/authorization.md
tells the whole flow.

The modules behind this one are private; this is the public API. authlib is
imported only when a flow runs.
"""

from typing import TYPE_CHECKING

from host_receiver._moved import moved_names
from host_receiver.auth._browser import (
    DEFAULT_HEADLESS_REDIRECT_URI,
    Browser,
    HeadlessBrowser,
    RedirectTarget,
    SystemBrowser,
)
from host_receiver.auth._challenge import BearerChallenge, parse_bearer_challenge
from host_receiver.auth._flow import EnterpriseIdp
from host_receiver.auth._oauth import (
    MAX_AUTHORIZATIONS,
    AuthorizationCodeGrant,
    ClientCredentialsGrant,
    EnterpriseGrant,
    Grant,
    OAuth,
    WorkloadIdentityGrant,
)
from host_receiver.auth._registration import PreRegisteredClient
from host_receiver.auth._store import (
    KEYRING_SERVICE,
    FileTokenStore,
    KeyringTokenStore,
    MemoryTokenStore,
    RegisteredClient,
    StoredAuthorization,
    TokenSet,
    TokenStore,
    default_token_store,
)
from host_receiver.auth._urls import canonical_resource

__all__ = [
    "DEFAULT_HEADLESS_REDIRECT_URI",
    "KEYRING_SERVICE",
    "MAX_AUTHORIZATIONS",
    "AuthorizationCodeGrant",
    "BearerChallenge",
    "Browser",
    "ClientCredentialsGrant",
    "EnterpriseGrant",
    "EnterpriseIdp",
    "FileTokenStore",
    "Grant",
    "HeadlessBrowser",
    "KeyringTokenStore",
    "MemoryTokenStore",
    "OAuth",
    "PreRegisteredClient",
    "RedirectTarget",
    "RegisteredClient",
    "StoredAuthorization",
    "SystemBrowser",
    "TokenSet",
    "TokenStore",
    "WorkloadIdentityGrant",
    "canonical_resource",
    "default_token_store",
    "parse_bearer_challenge",
]

if not TYPE_CHECKING:  # a type checker flags a moved name
    #: Names that moved to their one door (served with a DeprecationWarning until 0.4).
    __getattr__ = moved_names(
        __name__,
        dict.fromkeys(
            (
                "AuthError",
                "AuthorizationDenied",
                "DiscoveryError",
                "InsecureEndpoint",
                "InsufficientScope",
                "RegistrationError",
                "ResourceMismatch",
                "TokenRequestError",
            ),
            "host_receiver.errors",
        ),
    )
