"""``store_url``: the same store test on memory, SQLite and PostgreSQL (``postgres_url``, from
tests/conftest.py: a fresh database of the session's private cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest

#: The engines a store test runs on.
ENGINES = ("memory", "sqlite", "postgresql")


@pytest.fixture(params=ENGINES)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store of each engine."""
    if request.param == "memory":
        return "memory"
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return str(request.getfixturevalue("postgres_url"))
