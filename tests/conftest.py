"""Shared test configuration: anyio's pytest plugin runs every async test on asyncio and on trio.

The library claims anyio, so its tests run on both backends. Modules whose
subject is tied to one backend say so with their own ``anyio_backend``
fixture (the terminal host runs prompt_toolkit on asyncio; the interop suite
tests the peers, not the backend, and runs once on asyncio).

A test that takes more than about a second is marked ``slow``, so that
``pytest -m "not slow"`` is the inner loop: a whole directory here (the
interop suite, against real SDK peers), a whole module by its ``pytestmark``
(the long fuzz runs), any other test by its own ``@pytest.mark.slow``.

The suite runs on two processes (pytest-xdist: ``-n 2 --dist loadscope`` in
pyproject.toml; ``-n 0`` runs it in this one). Each worker sets up a session
fixture once (the HTTP peers, the test CA), and a module's tests all run on
one worker, so that a module-scoped fixture (a peer started for one module,
the built wheel, the conformance runs) is set up once. No test may rely on
another having run, on its worker or before it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.postgres_cluster import NO_POSTGRES, PostgresCluster, postgres_binaries, running_cluster

#: Directories (under tests/) whose every test is slow.
SLOW_DIRECTORIES = ("interop",)
_TESTS = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test under a slow directory ``slow``, before ``-m`` selects."""
    for item in items:
        path = item.path.resolve()
        if path.is_relative_to(_TESTS) and path.relative_to(_TESTS).parts[0] in SLOW_DIRECTORIES:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """A private PostgreSQL cluster, started once per test session (per worker) when a test asks
    for it, stopped at the end; skipped, saying why, where PostgreSQL is not installed."""
    binaries = postgres_binaries()
    if binaries is None:
        pytest.skip(NO_POSTGRES)
    with running_cluster(binaries) as cluster:
        yield cluster


@pytest.fixture
def postgres_url(postgres_cluster: PostgresCluster) -> str:
    """A fresh database of the session's cluster: its URL, with the password in it."""
    return postgres_cluster.url(postgres_cluster.new_database())
