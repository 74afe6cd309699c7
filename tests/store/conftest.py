"""The store's fixtures: a private PostgreSQL cluster per test session, a fresh database per test,
and ``store_url``: the same test on memory, SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.postgres_cluster import NO_POSTGRES, PostgresCluster, postgres_binaries, running_cluster

#: The engines a store test runs on.
ENGINES = ("memory", "sqlite", "postgresql")


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """One private cluster for the test session (skipped, saying why, without PostgreSQL)."""
    binaries = postgres_binaries()
    if binaries is None:
        pytest.skip(NO_POSTGRES)
    with running_cluster(binaries) as cluster:
        yield cluster


@pytest.fixture
def postgres_url(postgres_cluster: PostgresCluster) -> str:
    """A fresh database's URL, with the password in it."""
    return postgres_cluster.url(postgres_cluster.new_database())


@pytest.fixture(params=ENGINES)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store of each engine."""
    if request.param == "memory":
        return "memory"
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return str(request.getfixturevalue("postgres_url"))
