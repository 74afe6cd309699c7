"""The errors of MCP authorization, and how server text gets into them.

Rules:

- Every failure of the flow raises an :class:`AuthError` (or a subclass);
  the HTTP request that needed the token fails with it.
- No message ever contains an access token, a refresh token, a client
  secret, a private key, an authorization code, a PKCE verifier, a
  ``state`` value or an identity assertion: messages are built from URLs
  (without query or fragment), parameter names, error codes and counts.
- Text a server supplied (an ``error`` code, an ``error_description``, a
  URL it named) goes through :func:`quote` before it is put in a message or
  a log record: control characters are escaped and it is cut to a bounded
  length, so a hostile server cannot forge log lines or flood a terminal.

Fixed caps (docs/limits.md): ``_LIMIT``.
"""

from __future__ import annotations

import providers
from providers import HostReceiverError, safe_text

__all__ = [
    "AuthError",
    "AuthorizationDenied",
    "DiscoveryError",
    "InsecureEndpoint",
    "InsufficientScope",
    "RegistrationError",
    "ResourceMismatch",
    "TokenRequestError",
    "quote",
    "safe_url",
]

_LIMIT = 200


class AuthError(HostReceiverError):
    """MCP authorization failed; the message says why and never holds a secret."""


class DiscoveryError(AuthError):
    """Resource or authorization server metadata is missing, unusable or inconsistent."""


class ResourceMismatch(DiscoveryError):
    """The protected resource metadata names a resource other than the server we talk to."""


class InsecureEndpoint(AuthError):
    """An endpoint or redirect URI the flow refuses: plain http off loopback, or a non-loopback redirect."""


class RegistrationError(AuthError):
    """No client identity could be had (no pre-registration, no metadata document, no registration)."""


class AuthorizationDenied(AuthError):
    """The authorization response was an error, or failed the state or issuer check."""


class TokenRequestError(AuthError):
    """The token endpoint refused a request or answered something unusable."""

    def __init__(self, message: str, *, error: str | None = None) -> None:
        super().__init__(message)
        self.error = error


class InsufficientScope(AuthError):
    """The server kept answering 403 insufficient_scope after the allowed re-authorizations."""


def quote(text: object, limit: int = _LIMIT) -> str:
    """``text`` from a server, safe to put in a message or a log record (:func:`providers.safe_text`)."""
    return safe_text(text, limit)


def safe_url(url: str) -> str:
    """``url`` without user info, query or fragment (:func:`providers.safe_url`), escaped (for messages)."""
    return quote(providers.safe_url(url))
