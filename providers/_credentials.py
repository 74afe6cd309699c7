"""API keys: from the environment or the OS keyring, never from the config file.

Rules:

* Keys live in the keyring under the service :data:`KEYRING_SERVICE`, with the
  provider entry's name as the user name.
* The key for an entry is looked up in this order, first found wins:

  1. the variable named by the entry's ``api_key_env``;
  2. ``OPENAI_API_KEY``, only for an entry without a ``base_url`` of its own
     (it follows ``OPENAI_BASE_URL`` exactly as the ``openai`` library does, so
     the standard key never goes to a host it was not meant for);
  3. the keyring.

* A keyring that is missing or locked reads as "no key"; storing into it then
  fails with a :class:`ConfigError` that suggests an environment variable.
* No function here logs or formats a key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import keyring
import keyring.errors

from host_receiver.errors import ConfigError
from host_receiver.sanitize import safe_logger

from ._config import ProviderEntry

__all__ = ["KEYRING_SERVICE", "FoundKey", "delete_key", "find_key", "keyring_key", "store_key"]

log = safe_logger("providers.credentials")

KEYRING_SERVICE = "host-receiver"
OPENAI_KEY_ENV = "OPENAI_API_KEY"


@dataclass(frozen=True)
class FoundKey:
    """A key and where it came from (``source`` is safe to show)."""

    value: str
    source: str

    def __repr__(self) -> str:
        return f"FoundKey(value='***', source={self.source!r})"


def keyring_key(provider: str) -> str | None:
    """The key stored for ``provider``; ``None`` when absent or no keyring is usable."""
    try:
        return keyring.get_password(KEYRING_SERVICE, provider) or None
    except keyring.errors.KeyringError as exc:
        log.debug("keyring unavailable: %s", type(exc).__name__)
        return None


def store_key(provider: str, key: str) -> None:
    """Store ``key`` for ``provider`` in the OS keyring."""
    if not key:
        raise ConfigError("refusing to store an empty API key")
    try:
        keyring.set_password(KEYRING_SERVICE, provider, key)
    except keyring.errors.KeyringError as exc:
        raise ConfigError(
            f"cannot store the key for {provider!r} in the OS keyring ({type(exc).__name__}); "
            "set api_key_env in the provider entry and export the key in that variable instead"
        ) from None


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
        return FoundKey(environ[entry.api_key_env], f"env {entry.api_key_env}")
    if entry.base_url is None and environ.get(OPENAI_KEY_ENV):
        return FoundKey(environ[OPENAI_KEY_ENV], f"env {OPENAI_KEY_ENV}")
    stored = keyring_key(entry.name)
    if stored:
        return FoundKey(stored, "keyring")
    return None
