"""Client scenarios of the next conformance runner (0.2.0-alpha.12, ``conformance-next`` beside
0.1.16 in ``.peers/conformance``, ``.ci/install-conformance``), through the CLI.

The scenarios run are every ``auth/*`` one the runner lists (DPoP and the workload-identity
grant included) and every other one of a client of this kind (``conformance_client.py``: the
context's ``toolCalls``, else every listed tool with arguments from its schema, and what three
scenarios' descriptions ask of the client): the version handshake, tool calls, the 2026-07-28
request metadata and its -32022 retry, the standard and the ``x-mcp-header`` headers (mirrored
with no prior list, invalid tools excluded), ``requestState`` rounds, SSE retry, form defaults
(SEP-1034), and JSON Schema 2020-12 kept intact and its network ``$ref`` never fetched. Each
runs at the runner's default version and at ``--spec-version 2026-07-28`` (skipped where the
runner says the scenario does not apply).
No check may be a FAILURE or a WARNING. Not run here: the skills extension (SEP-2640, out of
scope).
"""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.interop import _missing
from tests.interop.test_conformance_auth import CONFORMANCE_DIR, LOG_CHECKS, NODE, Outcome, run_scenario

RUNNER = CONFORMANCE_DIR / "conformance-next" / "dist" / "index.js"
NOT_INSTALLED = f"the next conformance runner is missing ({RUNNER}; run .ci/install-conformance)"
MODERN = "2026-07-28"
#: The scenarios of a client of this kind, besides every ``auth/*``.
PLAIN = (
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "json-schema-ref-no-deref",
    "json-schema-2020-12-preservation",
    "sse-retry",
    "request-metadata",
    "sep-2322-client-request-state",
    "http-standard-headers",
    "http-custom-headers",
    "http-invalid-tool-headers",
)
NOT_APPLICABLE = "is not applicable at spec version"


def _auth_scenarios() -> list[str]:
    if not (NODE.exists() and RUNNER.exists()):
        return []
    listing = subprocess.run(
        [str(NODE), str(RUNNER), "list", "--client"], capture_output=True, text=True, timeout=60, check=True
    )
    return [line.split()[1] for line in listing.stdout.splitlines() if line.strip().startswith("- auth/")]


SCENARIOS = [*PLAIN, *_auth_scenarios()]
RUNS = [(s, v) for s in SCENARIOS for v in (None, MODERN)]
#: The statuses that fail a run, as the runner counts them (INFO and SKIPPED are no verdict).
BAD = frozenset({"FAILURE", "WARNING"})
#: Each run's outcome, by (scenario, spec version or None for the runner's default).
Outcomes = dict[tuple[str, str | None], Outcome]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> Outcomes:
    if not (NODE.exists() and RUNNER.exists()):
        _missing(NOT_INSTALLED)
    base = tmp_path_factory.mktemp("conformance-next")

    def run(scenario: str, version: str | None) -> Outcome:
        options = ("--spec-version", version) if version else ()
        return run_scenario(scenario, base / f"{scenario}-{version or 'default'}", RUNNER, *options)

    with ThreadPoolExecutor(3) as pool:
        done = list(pool.map(lambda key: run(*key), RUNS))
    return dict(zip(RUNS, done, strict=True))


@pytest.mark.parametrize(("scenario", "version"), RUNS, ids=[f"{s}-{v or 'default'}" for s, v in RUNS])
def test_scenario(scenario: str, version: str | None, outcomes: Outcomes) -> None:
    outcome = outcomes[scenario, version]
    if NOT_APPLICABLE in outcome.output:
        pytest.skip(f"the runner does not run {scenario} at {version}")
    verdicts = [c for c in outcome.checks if c["id"] not in LOG_CHECKS]
    bad = [f"{c['id']}: {c['status']} {c.get('errorMessage', '')}" for c in verdicts if c["status"] in BAD]
    assert any(c["status"] == "SUCCESS" for c in verdicts), outcome.output[-4000:]
    assert not bad, "\n".join(bad) + "\n\n" + outcome.output[-4000:]
    assert outcome.returncode == 0, outcome.output[-4000:]
