"""People: their names and teams, the hash of each one's token, their notification channels.

A person's token is shown once, when they are added: the store keeps only
its SHA-256 (:func:`token_hash`). A channel's URL holds secrets: an error
names a channel by its number, never by its URL.

Fixed caps (docs/limits.md): ``MAX_CHANNEL_URL``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Sequence

from host_receiver.errors import StoreError
from host_receiver.store._core import StoreCore, check_name, from_json, to_json
from host_receiver.store._engines import Tx
from host_receiver.store._records import Person, PersonChannel

__all__ = ["MAX_CHANNEL_URL", "token_hash"]

#: The longest channel URL kept (characters).
MAX_CHANNEL_URL = 2000


def token_hash(token: str) -> str:
    """What the store keeps of a person's token: SHA-256 of it (the token is 32 random bytes)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


class People(StoreCore):
    """The people of the store and their notification channels."""

    async def add_person(
        self, name: str, teams: Sequence[str] = (), *, channels: Sequence[str] = ()
    ) -> tuple[Person, str]:
        """Add ``name`` in ``teams`` with their notification ``channels`` (URLs); the person and their
        new token (shown once: only its hash is kept)."""
        check_name(name, "a person's")
        for team in teams:
            check_name(team, "a team's")
        kept = [_channel(name, url, n) for n, url in enumerate(channels, 1)]
        token = secrets.token_urlsafe(32)
        person = Person(name=name, teams=tuple(dict.fromkeys(teams)), created=time.time())

        def step(tx: Tx) -> None:
            if tx.rows("SELECT 1 FROM people WHERE name = ?", (name,)):
                raise StoreError(
                    f"{name} is already in the store: 'people remove {name}' first to give a new token"
                )
            tx.execute(
                "INSERT INTO people (name, token_hash, teams, created) VALUES (?,?,?,?)",
                (name, token_hash(token), to_json(list(person.teams)), person.created),
            )
            for channel in kept:
                _insert_channel(tx, channel)

        await self._engine.run(step)
        return person, token

    async def add_channel(self, name: str, url: str) -> PersonChannel:
        """Add a notification channel (``url``, which holds secrets) to the person ``name``;
        :class:`StoreError` when there is nobody of that name."""
        channel = _channel(name, url, 1)

        def step(tx: Tx) -> None:
            if not tx.rows("SELECT 1 FROM people WHERE name = ?", (name,)):
                raise StoreError(f"nobody named {json.dumps(name[:80])} in the store (see 'people list')")
            _insert_channel(tx, channel)

        await self._engine.run(step)
        return channel

    async def clear_channels(self, name: str) -> int:
        """Remove every notification channel of ``name``; how many there were."""
        return int(
            await self._engine.run(
                lambda tx: tx.execute("DELETE FROM person_channels WHERE person = ?", (name,))
            )
        )

    async def channels(self, name: str | None = None) -> list[PersonChannel]:
        """The notification channels of ``name`` (None: everyone's), by person, oldest first."""
        sql = "SELECT id, person, url, added FROM person_channels"
        rows = await (
            self._read(f"{sql} WHERE person = ? ORDER BY added, id", (name,))
            if name is not None
            else self._read(f"{sql} ORDER BY person, added, id")
        )
        return [PersonChannel(str(r[0]), str(r[1]), str(r[2]), float(r[3])) for r in rows]

    async def people(self) -> list[Person]:
        """Everyone in the store, by name (never a token)."""
        rows = await self._read("SELECT name, teams, created FROM people ORDER BY name")
        return [Person(name=str(r[0]), teams=tuple(from_json(r[1])), created=float(r[2])) for r in rows]

    async def remove_person(self, name: str) -> bool:
        """Remove ``name`` (their token stops working); False when there was nobody of that name."""

        def step(tx: Tx) -> bool:
            tx.execute("DELETE FROM person_channels WHERE person = ?", (name,))
            return bool(tx.execute("DELETE FROM people WHERE name = ?", (name,)))

        return await self._engine.run(step)

    async def authenticate(self, token: str) -> Person | None:
        """The person whose token is ``token``, or None."""
        wanted = token_hash(token)
        rows = await self._read(
            "SELECT name, teams, created, token_hash FROM people WHERE token_hash = ?", (wanted,)
        )
        for name, teams, created, kept in rows:
            if hmac.compare_digest(str(kept), wanted):
                return Person(name=str(name), teams=tuple(from_json(teams)), created=float(created))
        return None


def _channel(person: str, url: str, number: int) -> PersonChannel:
    """A new channel of ``person``; :class:`StoreError` naming it by ``number``, never its URL."""
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme or not rest or len(url) > MAX_CHANNEL_URL or not url.isprintable():
        raise StoreError(
            f"channel {number} is not a URL (webhook+https://..., or an Apprise URL like mailto://...; "
            f"printable, at most {MAX_CHANNEL_URL} characters)"
        )
    return PersonChannel(id=secrets.token_hex(6), person=person, url=url, added=time.time())


def _insert_channel(tx: Tx, channel: PersonChannel) -> None:
    tx.execute(
        "INSERT INTO person_channels (id, person, url, added) VALUES (?,?,?,?)",
        (channel.id, channel.person, channel.url, channel.added),
    )
