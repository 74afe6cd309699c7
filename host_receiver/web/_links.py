"""Signed links of ``inbox serve``: a notice's link that signs its holder in for its one item.

Rules:

- A link is ``{inbox}/items/{id}#link=TOKEN``; the token is ``UNTIL.WHO.MAC``:
  until when it signs in (seconds since the epoch), the person it signs in as
  (base64url of their name; empty for a ``--notify`` channel's link: no
  person) and an HMAC-SHA256 of the item id, the time and the person, under
  the store's key (:data:`LINK_KEY`, made once by whichever process asks first
  and kept in the store, :meth:`Store.secret`). Every process serving the store
  signs and checks with the same key, so that a link made by one works on
  another; nothing of a link is stored (a notice waits in the queue with its
  plain link and is signed as it is sent).
- :meth:`SignedLinks.verify` takes a token only for the item it was made for
  and until its time (constant-time comparison); whether the item is still
  pending, and the person still there and allowed to see it, the board checks
  (:meth:`StoreBoard.redeem_link <host_receiver.web._board.StoreBoard.redeem_link>`).

Fixed caps (docs/limits.md): ``MAX_TOKEN``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time

from host_receiver.store import Store

__all__ = ["LINK_KEY", "MAX_TOKEN", "SignedLinks"]

#: The name of the signing key among the store's secrets.
LINK_KEY = "inbox-link-key"
#: The longest token read (characters); a longer one is refused unread.
MAX_TOKEN = 256


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class SignedLinks:
    """Signs and checks the links of one store (module rules); ``ttl``: how long a link signs in."""

    def __init__(self, key: str, ttl: float = 3600.0) -> None:
        self._key = key.encode("ascii")
        self.ttl = ttl

    @classmethod
    async def of(cls, store: Store, ttl: float = 3600.0) -> SignedLinks:
        """The links of ``store``, with its key (made now if it has none)."""
        return cls(await store.secret(LINK_KEY), ttl)

    def __repr__(self) -> str:
        return f"SignedLinks(ttl={self.ttl})"  # never the key

    def _mac(self, item_id: str, until: int, person: str) -> str:
        message = f"host-receiver link v1\n{item_id}\n{until}\n{person}".encode("utf-8", "surrogatepass")
        return _b64(hmac.new(self._key, message, hashlib.sha256).digest())

    def sign(self, link: str, item_id: str, person: str | None, *, now: float | None = None) -> str:
        """``link`` (the item's page) with a token that signs ``person`` (None: nobody in particular)
        in for item ``item_id`` alone, for :attr:`ttl` seconds from ``now``."""
        until = int((time.time() if now is None else now) + self.ttl)
        who = person or ""
        token = f"{until}.{_b64(who.encode('utf-8'))}.{self._mac(item_id, until, who)}"
        return f"{link.partition('#')[0]}#link={token}"

    def verify(self, item_id: str, token: str) -> tuple[str | None, float] | None:
        """The person a token signs in (None: nobody in particular) and until when, when it was made
        for ``item_id`` under this key and its time is not up; else None."""
        if len(token) > MAX_TOKEN or token.count(".") != 2:
            return None
        until, who, mac = token.split(".")
        if not until.isdigit() or len(until) > 12:
            return None
        try:
            person = _unb64(who).decode("utf-8")
        except (binascii.Error, ValueError):
            return None
        expected = self._mac(item_id, int(until), person).encode()
        if not hmac.compare_digest(mac.encode("ascii", "replace"), expected):
            return None
        if time.time() >= int(until):
            return None
        return (person or None), float(until)
