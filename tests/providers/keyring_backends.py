"""Keyring backends for tests: the machine has no OS keyring service.

Neither is ever picked by keyring's own discovery (which considers every
imported backend class): tests choose them explicitly. ``MemoryKeyring`` lives
in one process; ``FileKeyring`` keeps its passwords in
the JSON file named by ``$PROVIDERS_TEST_KEYRING_FILE`` so that subprocesses
(``PYTHON_KEYRING_BACKEND=tests.providers.keyring_backends.FileKeyring``)
share them. ``PlaintextKeyring`` is that file under the name and ``scheme``
of keyrings.alt's ``PlaintextKeyring`` (not installed here), the backend a
headless machine often ends up with: secrets in clear text in a file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import keyring
import keyring.backend
import keyring.errors
import pytest
from keyring.compat import properties

FILE_ENV = "PROVIDERS_TEST_KEYRING_FILE"


class MemoryKeyring(keyring.backend.KeyringBackend):
    """Passwords in a dict; only used when set explicitly (never auto-discovered)."""

    @properties.classproperty
    def priority(cls) -> float:
        raise RuntimeError("set explicitly with keyring.set_keyring")

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.passwords: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.passwords.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.passwords[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if self.passwords.pop((service, username), None) is None:
            raise keyring.errors.PasswordDeleteError("no such password")


class FileKeyring(keyring.backend.KeyringBackend):
    """Passwords in the JSON file named by ``$PROVIDERS_TEST_KEYRING_FILE``."""

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]

    @properties.classproperty
    def priority(cls) -> float:
        if FILE_ENV not in os.environ:
            raise RuntimeError(f"${FILE_ENV} is not set")
        return 1

    def _load(self) -> dict[str, str]:
        path = Path(os.environ[FILE_ENV])
        return json.loads(path.read_text()) if path.exists() else {}

    def _save(self, data: dict[str, str]) -> None:
        Path(os.environ[FILE_ENV]).write_text(json.dumps(data))

    def get_password(self, service: str, username: str) -> str | None:
        return self._load().get(f"{service}/{username}")

    def set_password(self, service: str, username: str, password: str) -> None:
        data = self._load()
        data[f"{service}/{username}"] = password
        self._save(data)

    def delete_password(self, service: str, username: str) -> None:
        data = self._load()
        if data.pop(f"{service}/{username}", None) is None:
            raise keyring.errors.PasswordDeleteError("no such password")
        self._save(data)


class PlaintextKeyring(FileKeyring):
    """keyrings.alt.file.PlaintextKeyring's name and ``scheme``: passwords unencrypted in a file."""

    scheme = "no encryption"


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    """A fresh in-memory keyring for the test; the previous backend is restored after."""
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)
