"""How the test workers share the tests (pytest-xdist, ``--dist loadscope``, the default).

``loadscope`` gives each worker whole modules, the largest first, so that what a module's tests
share is set up once: a module-scoped fixture (a peer, the built wheel, a browser, the conformance
runs), and what each worker starts or imports at a module's first test (the PostgreSQL cluster,
the vendor SDKs, Apprise). Its end was uneven: the last modules handed out decided which worker
finished last, 2 to 4 s after the other in the inner loop.

The modules named in :data:`SPREAD_MODULES` are many small tests that share nothing costly: their
tests go one by one, after every whole module, to whichever worker is free, and so even out the
end (docs/architecture.md, "How long the tests take"). Each worker checks, once collected, that
none of their tests uses a module-, class- or package-scoped fixture
(:func:`check_spread_modules`).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from xdist.scheduler import LoadScopeScheduling

#: Modules (ids relative to the project's root) whose tests go one by one to either worker.
SPREAD_MODULES = frozenset(
    {
        "tests/transports/test_http.py",  # 435 tests, each with its own server on loopback
    }
)
_SHARED_SCOPES = frozenset({"module", "class", "package"})


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def check_spread_modules(items: Sequence[pytest.Item]) -> None:
    """A test of a spread module with a module-, class- or package-scoped fixture is an error that
    names the module (its fixture would be set up on both workers)."""
    for item in items:
        if not isinstance(item, pytest.Function) or _module(item.nodeid) not in SPREAD_MODULES:
            continue
        shared = sorted(
            name
            for name, definitions in item._fixtureinfo.name2fixturedefs.items()
            if definitions and definitions[-1].scope in _SHARED_SCOPES
        )
        if shared:
            raise pytest.UsageError(
                f"{item.nodeid} uses the {', '.join(shared)} fixture(s) shared by its module: "
                f"take {_module(item.nodeid)} out of SPREAD_MODULES in tests/scheduling.py"
            )


class SpreadScheduling(LoadScopeScheduling):
    """``loadscope``, with each test of a module of :data:`SPREAD_MODULES` a unit of its own (the
    units are handed out largest first: these come last)."""

    def _split_scope(self, nodeid: str) -> str:
        return nodeid if _module(nodeid) in SPREAD_MODULES else super()._split_scope(nodeid)
