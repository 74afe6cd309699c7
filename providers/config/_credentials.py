"""API keys: from the environment or the OS keyring, never from the config file.

Rules:

* Keys live in the keyring under the service :data:`KEYRING_SERVICE`, with the
  provider entry's name as the user name.
* The key for an entry is looked up in this order, first found wins:

  1. the variable named by the entry's ``api_key_env``;
  2. the vendor's standard variables (:data:`VENDOR_KEY_ENV`: ``OPENAI_API_KEY``
     for an ``openai`` entry, ``ANTHROPIC_API_KEY`` for an ``anthropic`` one,
     ``GOOGLE_API_KEY`` then ``GEMINI_API_KEY`` for a ``gemini`` one, the
     order in which ``google-genai`` prefers them),
     only for an entry without a ``base_url`` of its own (it follows the
     vendor's base URL variable exactly as the vendor's library does, so the
     standard key never goes to a host it was not meant for);
  3. the keyring.

* A keyring that is missing or locked, or one that would not keep a secret
  safe (keyring's null backend, a plain-text file:
  :func:`keyring_problem`, the check the OAuth token store makes too), reads
  as "no key"; storing into it fails with a :class:`ConfigError` that names
  ``--runtime-key-env`` (read the key from a variable at every run).
* No function here logs or formats a key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import keyring
import keyring.errors

from host_receiver._keyring import secret_store_problem
from host_receiver.errors import ConfigError
from host_receiver.sanitize import safe_logger

from ._config import ProviderEntry

__all__ = [
    "KEYRING_SERVICE",
    "VENDOR_KEY_ENV",
    "FoundKey",
    "delete_key",
    "find_key",
    "keyring_key",
    "keyring_problem",
    "runtime_key_hint",
    "store_key",
]

log = safe_logger("providers.credentials")

KEYRING_SERVICE = "host-receiver"
OPENAI_KEY_ENV = "OPENAI_API_KEY"
#: Per entry type, the variables the vendor's own library reads its key from, first wins.
VENDOR_KEY_ENV: dict[str, tuple[str, ...]] = {
    "openai": (OPENAI_KEY_ENV,),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
}


@dataclass(frozen=True)
class FoundKey:
    """A key and where it came from (``source`` is safe to show: ``keyring`` or ``from $VAR``)."""

    value: str
    source: str

    def __repr__(self) -> str:
        return f"FoundKey(value='***', source={self.source!r})"


def keyring_problem(provider: str) -> str | None:
    """Why the OS keyring cannot keep ``provider``'s key, or None when it can."""
    return secret_store_problem(KEYRING_SERVICE, provider)


def keyring_key(provider: str) -> str | None:
    """The key stored for ``provider``; ``None`` when absent or no keyring is usable."""
    problem = keyring_problem(provider)
    if problem is not None:
        log.debug("keyring not used: %s", problem)
        return None
    try:
        return keyring.get_password(KEYRING_SERVICE, provider) or None
    except keyring.errors.KeyringError as exc:
        log.debug("keyring unavailable: %s", type(exc).__name__)
        return None


def store_key(provider: str, key: str) -> None:
    """Store ``key`` for ``provider`` in the OS keyring."""
    if not key:
        raise ConfigError("refusing to store an empty API key")
    problem = keyring_problem(provider)
    try:
        if problem is None:
            keyring.set_password(KEYRING_SERVICE, provider, key)
    except keyring.errors.KeyringError as exc:
        problem = f"the OS keyring failed ({type(exc).__name__})"
    if problem is not None:
        raise ConfigError(f"cannot store the key for {provider!r}: {problem}; {runtime_key_hint(provider)}")


def runtime_key_hint(provider: str) -> str:
    """What to do instead of storing a key: read it from a variable at every run."""
    return (
        f"store no key and read it from a variable at every run instead: "
        f"`host-receiver providers add {provider} --runtime-key-env VAR`, then export VAR"
    )


def delete_key(provider: str) -> bool:
    """Remove the key stored for ``provider``; False when there was none."""
    try:
        keyring.delete_password(KEYRING_SERVICE, provider)
    except keyring.errors.PasswordDeleteError:
        return False
    except keyring.errors.KeyringError as exc:
        log.debug("keyring unavailable: %s", type(exc).__name__)
        return False
    return True


def find_key(entry: ProviderEntry, environ: Mapping[str, str]) -> FoundKey | None:
    """The key for ``entry`` by the lookup order in the module docstring."""
    if entry.api_key_env and environ.get(entry.api_key_env):
        return FoundKey(environ[entry.api_key_env], f"from ${entry.api_key_env}")
    for standard in VENDOR_KEY_ENV.get(entry.type, ()) if entry.base_url is None else ():
        if environ.get(standard):
            return FoundKey(environ[standard], f"from ${standard}")
    stored = keyring_key(entry.name)
    if stored:
        return FoundKey(stored, "keyring")
    return None
