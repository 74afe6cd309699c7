"""URLs in MCP authorization: the canonical server URI, loopback, and the well-known locations.

Rules:

- The canonical URI of an MCP server (RFC 8707 section 2, MCP "Canonical
  Server URI") is its URL with the scheme and host in lower case, the default
  port dropped, no query, no fragment, no user info, and the path as given
  except that a bare ``/`` is dropped (``https://host/`` is ``https://host``).
  Uppercase scheme and host are accepted.
- Loopback means the host ``localhost``, or an IP address in 127.0.0.0/8 or
  ``::1``. Plain ``http`` is allowed only there (OAuth 2.1 section 1.5 asks
  for HTTPS everywhere else); every authorization server URL is checked
  with :func:`require_secure` before anything is sent to it.
- A protected resource metadata ``resource`` matches the server when it has
  the same origin and its path is the server's path or a parent of it on a
  ``/`` boundary (a server at ``/mcp`` may declare its origin as resource,
  as RFC 9728 root metadata does).
- Well-known URLs: RFC 9728 section 3.1 for protected resource metadata
  (path-based first, then the root), RFC 8414 section 3.1 and OpenID Connect
  Discovery with the MCP path variants for authorization server metadata.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit, urlunsplit

from host_receiver.auth._quote import safe_url
from host_receiver.errors import InsecureEndpoint

__all__ = [
    "as_metadata_urls",
    "canonical_resource",
    "is_loopback",
    "origin",
    "prm_urls",
    "require_loopback_redirect",
    "require_secure",
    "resource_matches",
]

_DEFAULT_PORTS = {"http": 80, "https": 443}


def _netloc(scheme: str, host: str, port: int | None) -> str:
    if ":" in host:
        host = f"[{host}]"
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        return f"{host}:{port}"
    return host


def canonical_resource(url: str) -> str:
    """The canonical URI of the server at ``url`` (see the module rules)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {safe_url(url)}")
    path = parts.path
    if path == "/":
        path = ""
    return urlunsplit((scheme, _netloc(scheme, parts.hostname.lower(), parts.port), path, "", ""))


def origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url``, canonical."""
    parts = urlsplit(canonical_resource(url))
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def require_secure(url: str, what: str) -> str:
    """``url`` if it is https, or http on loopback; else :class:`InsecureEndpoint`."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "https" and parts.hostname:
        return url
    if scheme == "http" and is_loopback(parts.hostname):
        return url
    raise InsecureEndpoint(
        f"refusing the {what} {safe_url(url)}: authorization server endpoints must use https "
        "(plain http is allowed only on loopback)"
    )


def require_loopback_redirect(url: str) -> str:
    """``url`` if it is a loopback redirect URI (RFC 8252 section 7.3); else :class:`InsecureEndpoint`."""
    parts = urlsplit(url)
    if parts.scheme.lower() in ("http", "https") and is_loopback(parts.hostname) and not parts.fragment:
        return url
    raise InsecureEndpoint(
        f"refusing the redirect URI {safe_url(url)}: it must be http://127.0.0.1, http://[::1] "
        "or http://localhost (a loopback address, no fragment)"
    )


def resource_matches(declared: str, server_url: str) -> bool:
    """Whether metadata that declares ``declared`` as its resource may describe ``server_url``."""
    try:
        mine = urlsplit(canonical_resource(server_url))
        theirs = urlsplit(canonical_resource(declared))
    except ValueError:
        return False
    if (mine.scheme, mine.netloc) != (theirs.scheme, theirs.netloc):
        return False
    prefix = theirs.path.rstrip("/")
    return mine.path == theirs.path or mine.path.startswith(prefix + "/") or not prefix


def prm_urls(server_url: str) -> list[str]:
    """Protected resource metadata locations for ``server_url``: path-based, then root."""
    parts = urlsplit(canonical_resource(server_url))
    root = urlunsplit((parts.scheme, parts.netloc, "/.well-known/oauth-protected-resource", "", ""))
    path = parts.path.rstrip("/")
    if not path:
        return [root]
    return [root + path, root]


def as_metadata_urls(issuer: str) -> list[str]:
    """Authorization server metadata locations for ``issuer``, in the order MCP prescribes."""
    parts = urlsplit(issuer)
    base = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
    path = parts.path.rstrip("/")
    if not path:
        return [f"{base}/.well-known/oauth-authorization-server", f"{base}/.well-known/openid-configuration"]
    return [
        f"{base}/.well-known/oauth-authorization-server{path}",
        f"{base}/.well-known/openid-configuration{path}",
        f"{base}{path}/.well-known/openid-configuration",
    ]
