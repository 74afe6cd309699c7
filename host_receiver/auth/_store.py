"""Where tokens, refresh tokens and registered clients are kept between runs.

(About 440 lines, one idea: three stores of one entry format, and the one
place that chooses among them.)

Rules:

- One :class:`StoredAuthorization` per (server, issuer): the server's
  canonical URI and the authorization server's issuer (the server's origin
  for a 2025-03-26 server without metadata). It holds the tokens and, for a
  dynamically registered client, that registration (client id and secret):
  credentials are never reused with another authorization server.
- :class:`KeyringTokenStore` keeps each entry as one JSON secret in the OS
  keyring (service :data:`KEYRING_SERVICE`), plus an index entry listing
  the keys, because keyrings cannot enumerate.
- :func:`default_token_store` is the keyring when a backend works; when none
  does (a headless machine) it keeps entries in memory for the run, and the
  first entry saved logs one warning per process (a server without OAuth,
  which stores nothing, warns of nothing). A backend that would not keep secrets safe
  counts as none (:func:`keyring_problem`, the same check as for API keys:
  :mod:`host_receiver._keyring`): keyring's null backend (it drops them) and
  plain-text ones, for a chain the first backend, where writes go. A keyring that
  fails later (locked) warns once likewise and keeps that entry in memory.
  Nothing is ever written to a plain file unless the user chose
  :class:`FileTokenStore`.
- :class:`FileTokenStore` writes a JSON file with mode 0600 (atomically:
  a 0600 temporary file, then a rename) and refuses to read or write one
  that is not the user's or that group or others may read.
- Entries print without secrets (``repr`` hides them); :meth:`StoredAuthorization.summary`
  is what ``host-receiver auth list`` shows.
- Keyring and file access block, so they run in a worker thread.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import anyio.to_thread

from host_receiver._keyring import secret_store_problem
from host_receiver.errors import AuthError
from host_receiver.paths import private_file_problem
from host_receiver.sanitize import safe_logger

__all__ = [
    "KEYRING_SERVICE",
    "FileTokenStore",
    "KeyringTokenStore",
    "MemoryTokenStore",
    "RegisteredClient",
    "StoredAuthorization",
    "TokenSet",
    "TokenStore",
    "default_token_store",
]

logger = safe_logger("host_receiver.auth")

KEYRING_SERVICE = "host-receiver-oauth"
_INDEX = "index"
_warned: set[str] = set()


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        logger.warning("%s", message)


@dataclass(frozen=True)
class TokenSet:
    """An access token, what it was asked for, and how to renew it."""

    access_token: str = field(repr=False)
    token_type: str = "Bearer"
    expires_at: float | None = None
    refresh_token: str | None = field(default=None, repr=False)
    scope: tuple[str, ...] = ()  # granted, when the server said; else what was requested
    requested_scope: tuple[str, ...] = ()
    dpop_key: str | None = field(default=None, repr=False)  # the private JWK a DPoP token is bound to

    def expired(self, leeway: float = 30.0, now: float | None = None) -> bool:
        if self.expires_at is None:
            return False
        return (time.time() if now is None else now) >= self.expires_at - leeway


@dataclass(frozen=True)
class RegisteredClient:
    """A client registered dynamically (RFC 7591) with one authorization server."""

    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    secret_expires_at: float | None = None  # None or 0: never
    token_endpoint_auth_method: str | None = None
    redirect_uris: tuple[str, ...] = ()

    def usable(self, redirect_uri: str, now: float | None = None) -> bool:
        expiry = self.secret_expires_at
        if expiry and (time.time() if now is None else now) >= expiry:
            return False
        return redirect_uri in self.redirect_uris


@dataclass(frozen=True)
class StoredAuthorization:
    """What is kept for one server and one authorization server."""

    server: str
    issuer: str
    tokens: TokenSet | None = None
    client: RegisteredClient | None = None
    updated_at: float = 0.0

    def summary(self) -> str:
        """One line for people: no token, secret or code in it."""
        parts = [self.server, f"issuer {self.issuer}"]
        if self.client is not None:
            parts.append(f"registered client {self.client.client_id}")
        if self.tokens is None:
            parts.append("no token")
        else:
            if self.tokens.expires_at is None:
                parts.append("access token (no expiry given)")
            elif self.tokens.expired(leeway=0):
                parts.append("access token expired")
            else:
                left = int(self.tokens.expires_at - time.time())
                parts.append(f"access token valid for {left // 60} min")
            parts.append("refresh token" if self.tokens.refresh_token else "no refresh token")
            if self.tokens.dpop_key:
                parts.append("DPoP-bound")
            if self.tokens.scope:
                parts.append(f"scope {' '.join(self.tokens.scope)}")
        return ", ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StoredAuthorization:
        tokens = data.get("tokens")
        client = data.get("client")
        return cls(
            server=str(data["server"]),
            issuer=str(data["issuer"]),
            tokens=_tokens_from(tokens) if isinstance(tokens, dict) else None,
            client=_client_from(client) if isinstance(client, dict) else None,
            updated_at=float(data.get("updated_at") or 0.0),
        )


def _tokens_from(data: dict[str, Any]) -> TokenSet:
    return TokenSet(
        access_token=str(data["access_token"]),
        token_type=str(data.get("token_type") or "Bearer"),
        expires_at=float(data["expires_at"]) if data.get("expires_at") is not None else None,
        refresh_token=str(data["refresh_token"]) if data.get("refresh_token") else None,
        scope=tuple(data.get("scope") or ()),
        requested_scope=tuple(data.get("requested_scope") or ()),
        dpop_key=str(data["dpop_key"]) if data.get("dpop_key") else None,
    )


def _client_from(data: dict[str, Any]) -> RegisteredClient:
    return RegisteredClient(
        client_id=str(data["client_id"]),
        client_secret=str(data["client_secret"]) if data.get("client_secret") else None,
        secret_expires_at=float(data["secret_expires_at"]) if data.get("secret_expires_at") else None,
        token_endpoint_auth_method=data.get("token_endpoint_auth_method"),
        redirect_uris=tuple(data.get("redirect_uris") or ()),
    )


@runtime_checkable
class TokenStore(Protocol):
    """Keeps :class:`StoredAuthorization` entries; a host may bring its own."""

    async def load(self, server: str) -> list[StoredAuthorization]:
        """The entries for ``server`` (one per issuer), most recently updated first."""
        ...

    async def save(self, entry: StoredAuthorization) -> None:
        """Add or replace the entry for ``(entry.server, entry.issuer)``."""
        ...

    async def delete(self, server: str | None = None) -> list[StoredAuthorization]:
        """Remove the entries of ``server`` (every entry when None); return what was removed."""
        ...

    async def entries(self) -> list[StoredAuthorization]:
        """Every entry, most recently updated first."""
        ...


def _newest_first(entries: list[StoredAuthorization]) -> list[StoredAuthorization]:
    return sorted(entries, key=lambda e: e.updated_at, reverse=True)


def _stamped(entry: StoredAuthorization) -> StoredAuthorization:
    return replace(entry, updated_at=time.time())


class MemoryTokenStore:
    """Entries for the life of this object (this run)."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], StoredAuthorization] = {}

    def __repr__(self) -> str:
        return f"MemoryTokenStore({len(self._entries)} entries)"

    async def load(self, server: str) -> list[StoredAuthorization]:
        return _newest_first([e for e in self._entries.values() if e.server == server])

    async def save(self, entry: StoredAuthorization) -> None:
        self._entries[(entry.server, entry.issuer)] = _stamped(entry)

    async def delete(self, server: str | None = None) -> list[StoredAuthorization]:
        gone = [e for e in self._entries.values() if server is None or e.server == server]
        for entry in gone:
            del self._entries[(entry.server, entry.issuer)]
        return gone

    async def entries(self) -> list[StoredAuthorization]:
        return _newest_first(list(self._entries.values()))


class KeyringTokenStore:
    """Entries in the OS keyring (``keyring``), one JSON secret each plus an index."""

    def __init__(self, service: str = KEYRING_SERVICE) -> None:
        self.service = service
        self._fallback = MemoryTokenStore()

    def __repr__(self) -> str:
        return f"KeyringTokenStore({self.service!r})"

    # --- blocking parts, run in a thread ---------------------------------------

    def _get(self, name: str) -> str | None:
        import keyring

        return keyring.get_password(self.service, name)

    def _index(self) -> list[tuple[str, str]]:
        raw = self._get(_INDEX)
        if not raw:
            return []
        try:
            return [(str(s), str(i)) for s, i in json.loads(raw)]
        except (ValueError, TypeError):
            logger.warning("the keyring's index of OAuth entries is damaged; starting a new one")
            return []

    def _read(self, key: tuple[str, str]) -> StoredAuthorization | None:
        raw = self._get(_name(key))
        if not raw:
            return None
        try:
            return StoredAuthorization.from_json(json.loads(raw))
        except (ValueError, TypeError, KeyError):
            logger.warning("ignored a damaged OAuth entry in the keyring")
            return None

    def _load_sync(self, server: str | None) -> list[StoredAuthorization]:
        found = [self._read(key) for key in self._index() if server is None or key[0] == server]
        return [e for e in found if e is not None]

    def _save_sync(self, entry: StoredAuthorization) -> None:
        import keyring

        key = (entry.server, entry.issuer)
        keyring.set_password(self.service, _name(key), json.dumps(entry.to_json()))
        index = self._index()
        if key not in index:
            keyring.set_password(self.service, _INDEX, json.dumps([*index, key]))

    def _delete_sync(self, server: str | None) -> list[StoredAuthorization]:
        import keyring
        import keyring.errors

        index = self._index()
        gone: list[StoredAuthorization] = []
        keep: list[tuple[str, str]] = []
        for key in index:
            if server is not None and key[0] != server:
                keep.append(key)
                continue
            entry = self._read(key)
            if entry is not None:
                gone.append(entry)
            with contextlib.suppress(keyring.errors.PasswordDeleteError):
                keyring.delete_password(self.service, _name(key))
        if keep:
            keyring.set_password(self.service, _INDEX, json.dumps(keep))
        elif index:
            with contextlib.suppress(keyring.errors.PasswordDeleteError):
                keyring.delete_password(self.service, _INDEX)
        return gone

    # --- TokenStore --------------------------------------------------------------

    async def load(self, server: str) -> list[StoredAuthorization]:
        import keyring.errors

        kept = await self._fallback.load(server)
        try:
            stored = await anyio.to_thread.run_sync(self._load_sync, server)
        except keyring.errors.KeyringError as exc:
            _warn_once("keyring-read", f"cannot read the OS keyring ({type(exc).__name__}); no stored tokens")
            stored = []
        keys = {(e.server, e.issuer) for e in kept}
        return _newest_first([*kept, *(e for e in stored if (e.server, e.issuer) not in keys)])

    async def save(self, entry: StoredAuthorization) -> None:
        import keyring.errors

        entry = _stamped(entry)
        try:
            await anyio.to_thread.run_sync(self._save_sync, entry)
        except keyring.errors.KeyringError as exc:
            _warn_once(
                "keyring-write",
                f"cannot store tokens in the OS keyring ({type(exc).__name__}); keeping them in memory "
                "for this run only (use --auth-token-file to keep them in a 0600 file)",
            )
            await self._fallback.save(entry)

    async def delete(self, server: str | None = None) -> list[StoredAuthorization]:
        import keyring.errors

        gone = await self._fallback.delete(server)
        try:
            return [*gone, *await anyio.to_thread.run_sync(self._delete_sync, server)]
        except keyring.errors.KeyringError as exc:
            raise AuthError(f"cannot change the OS keyring ({type(exc).__name__})") from None

    async def entries(self) -> list[StoredAuthorization]:
        import keyring.errors

        try:
            stored = await anyio.to_thread.run_sync(self._load_sync, None)
        except keyring.errors.KeyringError as exc:
            raise AuthError(f"cannot read the OS keyring ({type(exc).__name__})") from None
        return _newest_first([*await self._fallback.entries(), *stored])


def _name(key: tuple[str, str]) -> str:
    return f"{key[0]} {key[1]}"  # neither a URL nor an issuer holds a space


def keyring_problem() -> str | None:
    """Why the OS keyring cannot hold tokens, or None when its backend is fit and answers a read."""
    return secret_store_problem(KEYRING_SERVICE, _INDEX)


async def default_token_store() -> TokenStore:
    """The OS keyring when it is fit and works, else memory for this run (warning once when the
    first entry is saved)."""
    problem = await anyio.to_thread.run_sync(keyring_problem)
    if problem is None:
        return KeyringTokenStore()
    return _UnkeptTokenStore(problem)


class _UnkeptTokenStore(MemoryTokenStore):
    """Memory, for want of a fit keyring: the first entry saved warns (once per process) that
    it is kept for this run only. Loading warns of nothing: a server without OAuth stores none."""

    def __init__(self, problem: str) -> None:
        super().__init__()
        self.problem = problem

    async def save(self, entry: StoredAuthorization) -> None:
        _warn_once(
            "no-keyring",
            f"{self.problem}: OAuth tokens are kept in memory for this run only "
            "(pass --auth-token-file PATH to keep them in a file only you can read)",
        )
        await super().save(entry)


class FileTokenStore:
    """Entries in one JSON file with mode 0600, which the user chose."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()

    def __repr__(self) -> str:
        return f"FileTokenStore({str(self.path)!r})"

    def _check(self) -> None:
        problem = private_file_problem(self.path, "the token file")
        if problem is not None:
            raise AuthError(problem)

    def _read_all(self) -> list[StoredAuthorization]:
        if not self.path.exists():
            return []
        self._check()
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return [StoredAuthorization.from_json(item) for item in data["entries"]]
        except (ValueError, TypeError, KeyError) as exc:
            raise AuthError(f"the token file {self.path} is damaged ({type(exc).__name__})") from None

    def _write_all(self, entries: list[StoredAuthorization]) -> None:
        if self.path.exists():
            self._check()
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        text = json.dumps({"version": 1, "entries": [e.to_json() for e in entries]}, indent=1)
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise

    def _save_sync(self, entry: StoredAuthorization) -> None:
        others = [e for e in self._read_all() if (e.server, e.issuer) != (entry.server, entry.issuer)]
        self._write_all([*others, entry])

    def _delete_sync(self, server: str | None) -> list[StoredAuthorization]:
        entries = self._read_all()
        gone = [e for e in entries if server is None or e.server == server]
        if gone:
            self._write_all([e for e in entries if e not in gone])
        return gone

    async def load(self, server: str) -> list[StoredAuthorization]:
        entries = await anyio.to_thread.run_sync(self._read_all)
        return _newest_first([e for e in entries if e.server == server])

    async def save(self, entry: StoredAuthorization) -> None:
        await anyio.to_thread.run_sync(self._save_sync, _stamped(entry))

    async def delete(self, server: str | None = None) -> list[StoredAuthorization]:
        return await anyio.to_thread.run_sync(self._delete_sync, server)

    async def entries(self) -> list[StoredAuthorization]:
        return _newest_first(await anyio.to_thread.run_sync(self._read_all))
