"""``WWW-Authenticate`` challenges (RFC 9110 section 11.6.1, RFC 6750 section 3, RFC 9728 section 5.1).

Rules:

- A header holds one or more challenges: a scheme, then a token68 or a
  comma-separated list of ``name=value`` parameters (token or quoted
  string, with ``\\`` escapes). Several headers are read as one list.
- The ``Bearer`` challenge is used, else the ``DPoP`` one (scheme names are
  case-insensitive, parameter names too); others are skipped. Malformed input yields what
  could be read up to the fault, never an exception.
- ``scope`` is a space-separated list; an empty one counts as absent.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["BearerChallenge", "asks_for_dpop_nonce", "parse_bearer_challenge"]

_TOKEN_CHARS = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_TOKEN68_CHARS = frozenset("-._~+/0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


@dataclass(frozen=True)
class BearerChallenge:
    """What a server's Bearer challenge says (every value as the server sent it)."""

    resource_metadata: str | None = None
    scope: tuple[str, ...] = ()
    error: str | None = None
    error_description: str | None = None

    @property
    def insufficient_scope(self) -> bool:
        return self.error == "insufficient_scope"


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def token(self, chars: frozenset[str] = _TOKEN_CHARS) -> str:
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] in chars:
            self.pos += 1
        return self.text[start : self.pos]

    def param_name(self) -> str | None:
        """The name of an auth-param starting here (position after its ``=``); None, unmoved, if none."""
        start = self.pos
        name = self.token()
        self.skip_space()
        if name and self.peek() == "=":
            self.pos += 1
            self.skip_space()
            if self.peek() == '"' or self.peek() in _TOKEN_CHARS:  # else: the "=" ends a token68
                return name
        self.pos = start
        return None

    def quoted(self) -> str | None:
        """A quoted-string at the position (opening quote included), unescaped; None if unterminated."""
        self.pos += 1
        out: list[str] = []
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char == "\\" and self.pos + 1 < len(self.text):
                out.append(self.text[self.pos + 1])
                self.pos += 2
                continue
            self.pos += 1
            if char == '"':
                return "".join(out)
            out.append(char)
        return None


def _challenges(text: str) -> list[tuple[str, dict[str, str]]]:
    """Every challenge in ``text``: (scheme in lower case, parameters by lower-case name).

    A token68 credential is kept under the name ``""``.
    """
    found: list[tuple[str, dict[str, str]]] = []
    reader = _Reader(text)
    while True:
        while True:  # empty list elements
            reader.skip_space()
            if reader.peek() != ",":
                break
            reader.pos += 1
        scheme = reader.token()
        if not scheme:
            return found  # the end, or a character no grammar allows here
        params: dict[str, str] = {}
        found.append((scheme.lower(), params))
        reader.skip_space()
        name = reader.param_name()
        if name is None:
            start = reader.pos
            credential = reader.token(_TOKEN68_CHARS)
            while reader.peek() == "=":
                credential += "="
                reader.pos += 1
            reader.skip_space()
            if credential and reader.peek() in ("", ","):
                params[""] = credential
            else:
                reader.pos = start
            continue
        while name is not None:
            if reader.peek() == '"':
                value = reader.quoted()
                if value is None:
                    return found
            else:
                value = reader.token()
            params.setdefault(name.lower(), value)
            reader.skip_space()
            if reader.peek() != ",":
                if reader.peek():
                    return found
                break
            while reader.peek() == ",":
                reader.pos += 1
                reader.skip_space()
            name = reader.param_name()


def parse_bearer_challenge(headers: Iterable[str]) -> BearerChallenge | None:
    """The first Bearer challenge in these ``WWW-Authenticate`` header values, else the first DPoP
    one (RFC 9449 section 7.1 gives it the same parameters); None without either."""
    found = _challenges(", ".join(headers))
    for wanted in ("bearer", "dpop"):
        for scheme, params in found:
            if scheme != wanted:
                continue
            scope = tuple(params.get("scope", "").split())
            return BearerChallenge(
                resource_metadata=params.get("resource_metadata") or None,
                scope=scope,
                error=params.get("error") or None,
                error_description=params.get("error_description") or None,
            )
    return None


def asks_for_dpop_nonce(headers: Iterable[str]) -> bool:
    """Whether a ``DPoP`` challenge among these header values says ``use_dpop_nonce`` (RFC 9449 section 9)."""
    return any(
        scheme == "dpop" and params.get("error") == "use_dpop_nonce"
        for scheme, params in _challenges(", ".join(headers))
    )
