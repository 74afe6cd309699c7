"""How text a server supplied gets into the messages and logs of MCP authorization.

Rules:

- Every failure of the flow raises an ``AuthError`` (or a subclass, all in
  :mod:`host_receiver.errors`); the HTTP request that needed the token fails
  with it.
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

from host_receiver import sanitize

__all__ = ["quote", "safe_url"]

_LIMIT = 200


def quote(text: object, limit: int = _LIMIT) -> str:
    """``text`` from a server, safe for a message or a log (:func:`~host_receiver.sanitize.safe_text`)."""
    return sanitize.safe_text(text, limit)


def safe_url(url: str) -> str:
    """``url`` without user info, query or fragment (:func:`~host_receiver.sanitize.safe_url`), escaped."""
    return quote(sanitize.safe_url(url))
