"""Every ``auth/*`` client scenario of the official conformance runner, through the CLI.

Two runners (``.ci/install-conformance``: @modelcontextprotocol/conformance
with its own Node 22): the current release in ``.peers/conformance`` and the
next one, a pre-release, in ``.peers/conformance-next``. Each starts its authorization and
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

#: Each runner's version and where it is installed.
RUNNERS = {"0.1.16": PEERS_DIR / "conformance", "0.2.0-alpha.12": PEERS_DIR / "conformance-next"}
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


def _node(version: str) -> Path:
    return RUNNERS[version] / "node_modules" / ".bin" / "node"


def _runner(version: str) -> Path:
    return RUNNERS[version] / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"


def _require_runner(version: str) -> None:
    if not (_node(version).exists() and _runner(version).exists()):
        _missing(f"the conformance runner {version} is not installed (run .ci/install-conformance)")


def _list_scenarios(version: str) -> list[str]:
    if not (_node(version).exists() and _runner(version).exists()):
        return []
    listing = subprocess.run(
        [str(_node(version)), str(_runner(version)), "list", "--client"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    names = [line.split()[1] for line in listing.stdout.splitlines() if line.strip().startswith("- auth/")]
    assert names, f"the runner {version} lists no auth scenario:\n{listing.stdout}"
    return names


#: (runner version, scenario) for every auth scenario of every installed runner.
SCENARIOS = [(version, name) for version in RUNNERS for name in _list_scenarios(version)]


@dataclass
class Outcome:
    scenario: str
    returncode: int
    output: str
    checks: list[dict[str, Any]]


def _run(version: str, scenario: str, outdir: Path) -> Outcome:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    command = f"{sys.executable} {CLIENT}"
    argv = [
        str(_node(version)),
        str(_runner(version)),
        "client",
        "--command",
        command,
        "--scenario",
        scenario,
    ]
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
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[tuple[str, str], Outcome]]:
    for version in RUNNERS:
        _require_runner(version)
    base = tmp_path_factory.mktemp("conformance")

    def run(job: tuple[str, str]) -> tuple[tuple[str, str], Outcome]:
        version, scenario = job
        return job, _run(version, scenario, base / f"{version}_{scenario.replace('/', '_')}")

    with ThreadPoolExecutor(PARALLEL) as pool:
        yield dict(pool.map(run, SCENARIOS))


@pytest.mark.parametrize(("version", "at_least"), [("0.1.16", 22), ("0.2.0-alpha.12", 33)])
def test_each_runner_lists_its_auth_scenarios(version: str, at_least: int) -> None:
    _require_runner(version)
    assert len(_list_scenarios(version)) >= at_least


@pytest.mark.parametrize(
    ("version", "scenario"),
    SCENARIOS or [("-", "(runner not installed)")],
    ids=[f"{v}-{s}" for v, s in SCENARIOS] or None,
)
def test_scenario(version: str, scenario: str, outcomes: dict[tuple[str, str], Outcome]) -> None:
    outcome = outcomes[(version, scenario)]
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
