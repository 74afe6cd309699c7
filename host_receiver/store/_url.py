"""The ``--store`` value: which backend, where, and how to show it without its password."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from host_receiver.errors import InvalidStoreUrl
from host_receiver.sanitize import safe_text

__all__ = ["StoreUrl", "parse_store_url"]

#: The file name endings taken for a SQLite file without the ``sqlite:///`` prefix.
SQLITE_SUFFIXES = (".db", ".sqlite")
_FORMS = "'memory', 'sqlite:///PATH', a path ending .db or .sqlite, or 'postgresql://USER@HOST:PORT/DATABASE'"


@dataclass(frozen=True, slots=True)
class StoreUrl:
    """A parsed ``--store`` value. ``target`` is the SQLite path or the libpq connection URL
    (which may hold a password: show :attr:`shown` instead)."""

    kind: Literal["memory", "sqlite", "postgresql"]
    target: str

    @property
    def shared(self) -> bool:
        """Whether other processes may use the same store (SQLite, PostgreSQL)."""
        return self.kind != "memory"

    @property
    def secrets(self) -> tuple[str, ...]:
        """The passwords in a PostgreSQL URL (of its user info, a ``password=`` parameter)."""
        if self.kind != "postgresql":
            return ()
        parts = urlsplit(self.target)
        found = [parts.password or ""]
        found += [v for k, v in parse_qsl(parts.query, keep_blank_values=True) if k.lower() == "password"]
        found += [unquote(secret) for secret in found]
        return tuple(sorted({secret for secret in found if secret}, key=len, reverse=True))

    @property
    def shown(self) -> str:
        """The value to print or log: a PostgreSQL URL without its password."""
        if self.kind == "memory":
            return "memory"
        if self.kind == "sqlite":
            return f"sqlite:///{self.target}"
        return _without_password(self.target)


def parse_store_url(value: str) -> StoreUrl:
    """The store ``value`` names; :class:`~host_receiver.errors.InvalidStoreUrl` says what is accepted."""
    text = value.strip()
    if text == "memory":
        return StoreUrl("memory", "")
    if text.startswith("sqlite:"):
        if not text.startswith("sqlite:///") or text == "sqlite:///":
            raise InvalidStoreUrl(
                f"--store {safe_text(text, 200)}: a SQLite store is sqlite:///PATH (give {_FORMS})"
            )
        return StoreUrl("sqlite", text[len("sqlite:///") :])
    if text.startswith(("postgresql://", "postgres://")):
        parts = urlsplit(text)
        if parts.fragment:
            raise InvalidStoreUrl(f"--store {_without_password(text)}: a PostgreSQL URL has no #fragment")
        return StoreUrl("postgresql", text)
    if "://" not in text and Path(text).suffix.lower() in SQLITE_SUFFIXES:
        return StoreUrl("sqlite", text)
    shown = _without_password(text) if "://" in text else text
    raise InvalidStoreUrl(f"--store {safe_text(shown, 200)}: not a store (give {_FORMS})")


def _without_password(url: str) -> str:
    """``url`` with the password of its user info and any ``password=`` parameter replaced."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":***"
        netloc = f"{userinfo}@{hostport}"
    query = parts.query
    if query:
        pairs = [
            (k, "***" if k.lower() == "password" else v) for k, v in parse_qsl(query, keep_blank_values=True)
        ]
        query = urlencode(pairs, safe="*/")
    return safe_text(urlunsplit(parts._replace(netloc=netloc, query=query)), 500)
