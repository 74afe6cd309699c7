"""DPoP (RFC 9449; MCP's SEP-1932): a key per authorization, a proof on every request that uses it.

Rules:

- A key is an EC P-256 key (``ES256``) made for one authorization and kept
  with the tokens it binds (``TokenSet.dpop_key``, its private JWK), as
  secret as they are. A refresh signs with the same key.
- When: ``OAuth(dpop=None)`` uses DPoP when the authorization server's
  metadata lists ``dpop_signing_alg_values_supported`` with ``ES256``;
  ``dpop=True`` always (refused when the server lists algorithms without
  ``ES256``); ``dpop=False`` never.
- A proof is a JWT: header ``typ: dpop+jwt``, ``alg: ES256``, ``jwk`` (the
  public key); claims ``jti`` (random), ``htm`` (the method), ``htu`` (the
  URL without query and fragment), ``iat``, on a resource request ``ath``
  (the access token's SHA-256, base64url), and ``nonce`` when the server
  gave one.
- Nonces: a token endpoint's 400 ``use_dpop_nonce``, or a resource's 401
  whose ``DPoP`` challenge says ``use_dpop_nonce``, is answered by one retry
  with the ``DPoP-Nonce`` it sent; a ``DPoP-Nonce`` on any resource answer
  is kept for that server's next proof.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from collections.abc import Sequence
from typing import Any

import httpx

from host_receiver.auth._quote import quote
from host_receiver.errors import AuthError

__all__ = ["ALGORITHM", "DPoPKey", "htu", "use_dpop"]

#: The one algorithm the client signs with: every DPoP server supports ES256 in practice.
ALGORITHM = "ES256"


class DPoPKey:
    """One authorization's proof-of-possession key; :meth:`proof` signs a request's proof."""

    def __init__(self, private_jwk: str | None = None) -> None:
        from joserfc.jwk import ECKey

        try:
            self._key = (
                ECKey.import_key(json.loads(private_jwk))
                if private_jwk
                else ECKey.generate_key("P-256", private=True)
            )
        except (ValueError, TypeError) as exc:
            raise AuthError(f"the stored DPoP key cannot be read ({type(exc).__name__})") from None
        self._public = self._key.as_dict(private=False)

    def __repr__(self) -> str:
        return f"DPoPKey(thumbprint={self._key.thumbprint()!r})"

    def private_jwk(self) -> str:
        """The key as a private JWK in JSON, to be kept with the tokens it binds."""
        return json.dumps(self._key.as_dict(private=True))

    def proof(
        self, method: str, url: str, *, access_token: str | None = None, nonce: str | None = None
    ) -> str:
        """A fresh DPoP proof for one ``method`` request to ``url``."""
        from joserfc import jwt

        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(24),
            "htm": method.upper(),
            "htu": htu(url),
            "iat": int(time.time()),
        }
        if access_token is not None:
            digest = hashlib.sha256(access_token.encode("ascii")).digest()
            claims["ath"] = base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")
        if nonce is not None:
            claims["nonce"] = nonce
        header = {"typ": "dpop+jwt", "alg": ALGORITHM, "jwk": self._public}
        return jwt.encode(header, claims, self._key, algorithms=[ALGORITHM])


def htu(url: str) -> str:
    """The ``htu`` of a request to ``url``: the URL without its query and fragment."""
    return str(httpx.URL(url).copy_with(query=None, fragment=None))


def use_dpop(wanted: bool | None, advertised: Sequence[str] | None) -> bool:
    """Whether an authorization uses DPoP: ``wanted`` (None: when the server offers it) against the
    server's ``dpop_signing_alg_values_supported``."""
    if wanted is False:
        return False
    if advertised is not None and ALGORITHM not in advertised:
        if wanted:
            raise AuthError(
                f"the authorization server's DPoP algorithms ({', '.join(map(quote, advertised)) or 'none'}) "
                f"do not include {ALGORITHM}, the one this client signs with"
            )
        return False
    return bool(wanted) or advertised is not None
