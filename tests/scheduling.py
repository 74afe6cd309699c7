"""How the test workers share the tests (pytest-xdist, ``--dist loadscope``, the default).

A module whose tests share an expensive setup (a module-scoped fixture: a peer, the built wheel, a
browser, the conformance runs; or a parse cached for the module) runs on one worker, so that it is
set up once; so does every module of a slow directory (the interop suite, whose session peers each
worker would otherwise start again). Every other test is a unit of its own, given to whichever
worker is free: when a few large modules went whole to one worker each, the two workers ended 4 to
5 s apart in the inner loop (docs/architecture.md, "How long the tests take").

The controller sees only the tests' ids, not their fixtures, so the modules are named here
(:data:`ONE_WORKER_MODULES`); each worker checks, once collected, that every test using a module-,
class- or package-scoped fixture is in one of them (:func:`check_shared_setups`).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from xdist.scheduler import LoadScopeScheduling

#: Modules (ids relative to the project's root) whose tests share one setup.
ONE_WORKER_MODULES = frozenset(
    {
        "tests/client/remote_tasks/test_shared_tasks.py",  # the fastmcp peer
        "tests/project/test_limits_table.py",  # the library's modules, parsed once
        "tests/project/test_packaging.py",  # the built wheel
        "tests/project/test_structure.py",  # the library's modules, parsed once
        "tests/web/test_inbox_browser.py",  # chromium and the inbox it drives
    }
)
_SHARED_SCOPES = frozenset({"module", "class", "package"})


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def shares_a_setup(nodeid: str, slow_directories: Sequence[str]) -> bool:
    """Whether the test ``nodeid`` runs on the worker that runs the rest of its module."""
    module = _module(nodeid)
    parts = module.split("/")
    return module in ONE_WORKER_MODULES or (
        len(parts) > 2 and parts[0] == "tests" and parts[1] in slow_directories
    )


def check_shared_setups(items: Sequence[pytest.Item], slow_directories: Sequence[str]) -> None:
    """A test with a module-, class- or package-scoped fixture in a module not kept on one worker
    is an error that names the module (its fixture would be set up on both workers)."""
    for item in items:
        if not isinstance(item, pytest.Function) or shares_a_setup(item.nodeid, slow_directories):
            continue
        shared = sorted(
            name
            for name, definitions in item._fixtureinfo.name2fixturedefs.items()
            if definitions and definitions[-1].scope in _SHARED_SCOPES
        )
        if shared:
            raise pytest.UsageError(
                f"{item.nodeid} uses the {', '.join(shared)} fixture(s) shared by its module: "
                f"add {_module(item.nodeid)} to ONE_WORKER_MODULES in tests/scheduling.py"
            )


class SharedSetupScheduling(LoadScopeScheduling):
    """``loadscope`` with a module as the unit only where its tests share a setup; each other test
    is a unit of its own (the largest units, the shared modules, go first)."""

    def __init__(self, config: pytest.Config, log: object, slow_directories: Sequence[str]) -> None:
        super().__init__(config, log)
        self._slow_directories = slow_directories

    def _split_scope(self, nodeid: str) -> str:
        return _module(nodeid) if shares_a_setup(nodeid, self._slow_directories) else nodeid
