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

from host_receiver.auth._browser import (
    DEFAULT_HEADLESS_REDIRECT_URI,
    Browser,
    HeadlessBrowser,
    RedirectTarget,
    SystemBrowser,
)
from host_receiver.auth._challenge import BearerChallenge, parse_bearer_challenge
from host_receiver.auth._errors import (
    AuthError,
    AuthorizationDenied,
    DiscoveryError,
    InsecureEndpoint,
    InsufficientScope,
    RegistrationError,
    ResourceMismatch,
    TokenRequestError,
)
from host_receiver.auth._flow import EnterpriseIdp
from host_receiver.auth._oauth import (
    MAX_AUTHORIZATIONS,
    AuthorizationCodeGrant,
    ClientCredentialsGrant,
    EnterpriseGrant,
    Grant,
    OAuth,
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
    "AuthError",
    "AuthorizationCodeGrant",
    "AuthorizationDenied",
    "BearerChallenge",
    "Browser",
    "ClientCredentialsGrant",
    "DiscoveryError",
    "EnterpriseGrant",
    "EnterpriseIdp",
    "FileTokenStore",
    "Grant",
    "HeadlessBrowser",
    "InsecureEndpoint",
    "InsufficientScope",
    "KeyringTokenStore",
    "MemoryTokenStore",
    "OAuth",
    "PreRegisteredClient",
    "RedirectTarget",
    "RegisteredClient",
    "RegistrationError",
    "ResourceMismatch",
    "StoredAuthorization",
    "SystemBrowser",
    "TokenRequestError",
    "TokenSet",
    "TokenStore",
    "canonical_resource",
    "default_token_store",
    "parse_bearer_challenge",
]
