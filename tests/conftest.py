"""Shared test configuration: anyio's pytest plugin runs every async test on asyncio and on trio.

The library claims anyio, so its tests run on both backends. Modules whose
subject is tied to one backend say so with their own ``anyio_backend``
fixture (the terminal host runs prompt_toolkit on asyncio; the interop suite
tests the peers, not the backend, and runs once on asyncio).

A test that takes more than about a second is marked ``slow``, so that
``pytest -m "not slow"`` is the inner loop: a whole directory here (the
interop suite, against real SDK peers), a whole module by its ``pytestmark``
(the long fuzz runs), any other test by its own ``@pytest.mark.slow``.

The suite runs on three processes (pytest-xdist: ``-n 3 --dist loadscope`` in
pyproject.toml; ``-n 0`` runs it in this one). Each worker sets up a session
fixture once (the HTTP peers, the test CA), and a module's tests all run on
one worker, so that a module-scoped fixture (a peer started for one module,
the built wheel, the conformance runs) is set up once; the tests of a few
large modules that share nothing go one by one, at the end, to whichever
worker is free (tests/scheduling.py). No test may rely on another having
run, on its worker or before it.

A TLS client context made from the default CA bundle gets its certificates
from a hashed directory (:func:`ca_bundles_read_on_demand`): the same
certificates, read when a chain is checked rather than all parsed for every
new client (17 ms of CPU each, about 900 times in the inner loop;
docs/architecture.md, "How long the tests take").

Once collected, what every process imported (the vendor SDKs' hundreds of
thousands of objects) is moved out of the garbage collector's sight
(``gc.freeze``), so that its full collections during the run, and at the
process's exit, do not walk them again.

Where ``PYTHONDONTWRITEBYTECODE`` is set, every process would compile the
project's modules and rewrite the tests' asserts again (3 s of each worker's
start, half its collection): the suite writes their bytecode all the same, to
the ``__pycache__`` directories that .gitignore leaves out (where the tree is
read-only, nothing is written and nothing fails).
"""

from __future__ import annotations

import functools
import gc
import os
import re
import shutil
import ssl
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import certifi
import pytest

from tests.postgres_cluster import NO_POSTGRES, PostgresCluster, postgres_binaries, running_cluster
from tests.scheduling import SpreadScheduling, check_spread_modules

# Before the project's modules and the test modules are imported (the module docstring).
sys.dont_write_bytecode = False

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
    check_spread_modules(items)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> SpreadScheduling | None:
    """``--dist loadscope`` (the default), with the tests of a few large modules handed out one by
    one at the end (tests/scheduling.py); any other ``--dist`` is pytest-xdist's own."""
    if config.getvalue("dist") != "loadscope":
        return None
    return SpreadScheduling(config, log)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection imported lives as long as the process: the collector stops walking it."""
    gc.freeze()


def pytest_unconfigure(config: pytest.Config) -> None:
    """At exit too: the worker's end (interpreter shutdown) does not walk it all again."""
    gc.freeze()


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With ``-m "not slow"`` (the inner loop), a slow directory is not even collected: importing
    its modules only to deselect every test took each worker 2 s."""
    markexpr = str(config.getoption("markexpr", "") or "")
    if " ".join(markexpr.split()) != "not slow" or not collection_path.is_dir():
        return None
    path = collection_path.resolve()
    return True if path.parent == _TESTS and path.name in SLOW_DIRECTORIES else None


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


@pytest.fixture(scope="session", autouse=True)
def ca_bundles_read_on_demand(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """``ssl.create_default_context(cafile=BUNDLE)`` made with ``BUNDLE``'s certificates as an
    ``openssl rehash``-ed directory instead, for the bundles clients use here by default: certifi's
    (httpx's default) and the ``SSL_CERT_FILE`` the session starts with (which httpx and google-genai
    read instead when it is set).

    The trust is the same (every certificate of the bundle, and nothing else); what changes is when
    OpenSSL reads them: on a chain's check instead of all of them on every new context. A test that
    sets its own ``SSL_CERT_FILE`` (the test CA of tests/transports/) gets that file read as usual,
    and so does every bundle when ``openssl`` is missing.
    """
    openssl = shutil.which("openssl")
    bundles = {certifi.where(), os.environ.get("SSL_CERT_FILE", "")} - {""}
    directories: dict[str, str] = {}
    for number, bundle in enumerate(sorted(bundles)):
        if openssl is None or not Path(bundle).is_file():
            continue
        directory = tmp_path_factory.mktemp(f"ca-bundle-{number}")
        pem = Path(bundle).read_text("ascii", errors="replace")
        certificates = re.findall(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", pem, re.DOTALL)
        for index, certificate in enumerate(certificates):
            (directory / f"{index}.pem").write_text(certificate + "\n", "ascii")
        subprocess.run([openssl, "rehash", str(directory)], check=True, capture_output=True)
        directories[bundle] = str(directory)
    original: Callable[..., ssl.SSLContext] = ssl.create_default_context

    @functools.wraps(original)
    def create_default_context(
        purpose: ssl.Purpose = ssl.Purpose.SERVER_AUTH,
        *,
        cafile: str | None = None,
        capath: str | None = None,
        cadata: Any = None,
    ) -> ssl.SSLContext:
        if cafile in directories:  # OpenSSL looks in each directory of a ":"-separated list
            capath = os.pathsep.join(filter(None, [directories[cafile], capath]))
            cafile = None
        return original(purpose, cafile=cafile, capath=capath, cadata=cadata)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ssl, "create_default_context", create_default_context)
        yield
