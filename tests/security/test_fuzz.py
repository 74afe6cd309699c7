"""The fuzz suite in the normal test run: generated frames against ``host-receiver run`` over a real pipe.

tests/servers/fuzz_server.py is the server; tests/security/fuzz_frames.py makes
the frames (seeded) and says what each is owed; tests/security/fuzz_run.py
runs the command and judges the run. Here: a few thousand frames per run, at
the default log level and at DEBUG (every record of a hostile run made safe).
The 100,000-frame command and its last result are in docs/security.md.
"""

from __future__ import annotations

import pytest

from tests.security.fuzz_run import run

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("seed", "log_level"), [(1, "WARNING"), (2, "DEBUG")])
def test_every_request_gets_one_valid_answer_nothing_hangs_and_the_receiver_still_serves(
    seed: int, log_level: str
) -> None:
    report = run(2_500, seed, wait=20, log_level=log_level)
    assert report["verdict"] == [], report
    assert report["requests_owed"] > 1_500  # the run did send requests, of every kind
    assert {"valid", "mutated", "cut-request", "garbage", "bad-id", "cancel"} <= set(report["kinds"])
    assert report["unanswered"] == 0 and report["problems"] == [] and report["still_serving"]
