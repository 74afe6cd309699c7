"""Every ``auth/*`` client scenario of the official conformance runner, through the CLI.

The runner (``.ci/install-conformance``: @modelcontextprotocol/conformance with
its own Node 22, in ``.peers/conformance``) starts its authorization and
resource servers and runs ``tests/interop/conformance_client.py SERVER_URL``,
which calls ``host-receiver run --url SERVER_URL --call test-tool`` with the
``--auth-*`` options the scenario's context implies. The scenarios are listed
by the runner itself, so a new one in a later release is run, not skipped.

Each scenario passes when the runner's checks are all SUCCESS. The only
exceptions are the INFO checks of :data:`INFORMATIONAL`, which the runner
emits by design whatever a client does (read in its source, 0.1.16), and
its request/response log lines; any other INFO (or a WARNING, or a
FAILURE) fails. The scenarios run three at a time in one session fixture (each is a
Node process plus a Python one, mostly waiting on each other).

Without the runner the tests skip locally and fail on CI (tests/interop/__init__.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.interop import PEERS_DIR, ROOT, _missing

CONFORMANCE_DIR = PEERS_DIR / "conformance" / "node_modules"
NODE = CONFORMANCE_DIR / ".bin" / "node"
RUNNER = CONFORMANCE_DIR / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
CLIENT = Path(__file__).resolve().parent / "conformance_client.py"
#: Per scenario, in milliseconds (the runner's default); the slowest takes about 2 s here.
TIMEOUT_MS = 30000
PARALLEL = 3

#: INFO checks the runner emits whatever the client does, by scenario:
#: - scope-retry-auth-attempt: one per authorization attempt, always INFO; the verdict is the
#:   SUCCESS/FAILURE check scope-retry-limit, which counts them.
INFORMATIONAL = {
    "auth/scope-retry-limit": {"scope-retry-auth-attempt"},
}
#: Request/response log lines of the runner's servers: status INFO, no verdict.
LOG_CHECKS = {"incoming-request", "outgoing-response", "incoming-auth-request", "outgoing-auth-response"}


NOT_INSTALLED = f"the conformance runner is not installed ({RUNNER} is missing; run .ci/install-conformance)"


def _runner_installed() -> bool:
    return NODE.exists() and RUNNER.exists()


def _list_scenarios() -> list[str]:
    if not _runner_installed():
        return []
    listing = subprocess.run(
        [str(NODE), str(RUNNER), "list", "--client"], capture_output=True, text=True, timeout=60, check=True
    )
    names = [line.split()[1] for line in listing.stdout.splitlines() if line.strip().startswith("- auth/")]
    assert names, f"the runner lists no auth scenario:\n{listing.stdout}"
    return names


SCENARIOS = _list_scenarios()


@dataclass
class Outcome:
    scenario: str
    returncode: int
    output: str
    checks: list[dict[str, Any]]


def run_scenario(scenario: str, outdir: Path, runner: Path = RUNNER, *options: str) -> Outcome:
    """Run one client scenario of ``runner`` against the CLI (``conformance_client.py``)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    command = f"{sys.executable} {CLIENT}"
    argv = [str(NODE), str(runner), "client", "--command", command, "--scenario", scenario, *options]
    result = subprocess.run(
        [*argv, "--timeout", str(TIMEOUT_MS), "-o", str(outdir)],
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT_MS / 1000 + 60,
    )
    found = sorted(outdir.rglob("checks.json"))
    checks = json.loads(found[-1].read_text()) if found else []
    return Outcome(scenario, result.returncode, result.stdout + result.stderr, checks)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Outcome]]:
    if not _runner_installed():
        _missing(NOT_INSTALLED)
    base = tmp_path_factory.mktemp("conformance")
    with ThreadPoolExecutor(PARALLEL) as pool:
        runs = pool.map(lambda s: run_scenario(s, base / s.replace("/", "_")), SCENARIOS)
        done = {o.scenario: o for o in runs}
    yield done


def test_the_runner_lists_auth_scenarios() -> None:
    if not _runner_installed():
        _missing(NOT_INSTALLED)
    assert len(SCENARIOS) >= 22, SCENARIOS


@pytest.mark.parametrize("scenario", SCENARIOS or ["(runner not installed)"])
def test_scenario(scenario: str, outcomes: dict[str, Outcome]) -> None:
    outcome = outcomes[scenario]
    allowed_info = INFORMATIONAL.get(scenario, set()) | LOG_CHECKS
    verdicts = [c for c in outcome.checks if c["id"] not in LOG_CHECKS]
    bad = [
        f"{c['id']}: {c['status']} {c.get('description', '')} {c.get('errorMessage', '')}"
        for c in outcome.checks
        if c["status"] != "SUCCESS" and not (c["status"] == "INFO" and c["id"] in allowed_info)
    ]
    assert verdicts and any(c["status"] == "SUCCESS" for c in verdicts), outcome.output[-4000:]
    assert not bad, "\n".join(bad) + "\n\n" + outcome.output[-4000:]
    assert outcome.returncode == 0, outcome.output[-4000:]
