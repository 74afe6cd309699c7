"""Opaque, tamper-evident cursors for ``tasks/list``.

A cursor names a position in one requestor's creation order (the ``seq`` of
the last task on the previous page) and carries a MAC over that position and
the requestor, keyed with a secret of the receiver. A cursor that was altered,
made up, or issued to another requestor does not verify and is refused.
Positions, not offsets, make pages stable while tasks come and go.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import struct

from host_receiver.errors import InvalidCursor

_SEQ = struct.Struct(">Q")
_MAC_BYTES = 12


class CursorCodec:
    """Encodes and verifies list positions for one receiver."""

    def __init__(self, key: bytes | None = None) -> None:
        self._key = key if key is not None else secrets.token_bytes(32)

    def _mac(self, requestor: str, packed: bytes) -> bytes:
        message = requestor.encode() + b"\x00" + packed
        return hmac.new(self._key, message, hashlib.sha256).digest()[:_MAC_BYTES]

    def encode(self, requestor: str, seq: int) -> str:
        """The cursor that resumes listing after position ``seq``."""
        packed = _SEQ.pack(seq)
        raw = packed + self._mac(requestor, packed)
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")

    def decode(self, requestor: str, cursor: str) -> int:
        """The position in ``cursor``; raises InvalidCursor when it does not verify."""
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        except (ValueError, UnicodeEncodeError) as exc:
            raise InvalidCursor("not a cursor issued by this receiver") from exc
        if len(raw) != _SEQ.size + _MAC_BYTES:
            raise InvalidCursor("not a cursor issued by this receiver")
        packed, mac = raw[: _SEQ.size], raw[_SEQ.size :]
        if not hmac.compare_digest(mac, self._mac(requestor, packed)):
            raise InvalidCursor("not a cursor issued by this receiver")
        (seq,) = _SEQ.unpack(packed)
        return int(seq)
