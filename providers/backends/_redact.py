"""Keep secrets out of messages: redaction of known keys and key-like tokens.

Rules: every text that came from a backend (error bodies, exception texts) goes
through :meth:`Redactor.text` before it is put in a :class:`ProviderError`.
The known secrets are replaced wherever they occur; so are tokens that look
like API keys (``sk-...``, ``Bearer ...``), because a backend may echo a
partly masked key or a different one. The rest is made safe to show by
:func:`host_receiver.sanitize.safe_text` (controls escaped, cut at ``limit``).
URLs are shown without user info, query or fragment (:func:`host_receiver.sanitize.safe_url`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from host_receiver.sanitize import safe_text

__all__ = ["MASK", "Redactor"]

MASK = "***"
_KEY_LIKE = re.compile(r"\b(sk|rk|pk)-[A-Za-z0-9_\-*.]{4,}|(?i:bearer)\s+[A-Za-z0-9_\-.~+/*=]{4,}")


class Redactor:
    """Replaces the given secrets and key-like tokens by ``***``."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        # Longest first, so that a key containing another is removed whole.
        self._secrets = sorted({s for s in secrets if s}, key=len, reverse=True)

    def text(self, text: str, *, limit: int | None = None) -> str:
        """``text`` without secrets, safe to show, cut to ``limit`` characters if given."""
        for secret in self._secrets:
            text = text.replace(secret, MASK)
        return safe_text(_KEY_LIKE.sub(MASK, text), limit)
