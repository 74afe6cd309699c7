"""The 2026-07-28 fuzz in the normal test run: a hostile modern server's input rounds against ``run --call``.

tests/servers/modern_fuzz_server.py plays seeded scripts of adversarial input
rounds (tests/security/fuzz_rounds.py) to one ``tools/call`` per process;
tests/security/fuzz_rounds_run.py runs the command and judges each call. Here:
ten calls, close to three hundred rounds, every way a call can end (a result,
a tool error, a JSON-RPC error, a malformed round, an entry the client
refuses, a bad cursor, a state JSON cannot carry, the round cap), every third
call at ``--log-level DEBUG``. The longer command is in docs/security.md.
"""

from __future__ import annotations

import pytest

from tests.security.fuzz_rounds_run import run

pytestmark = pytest.mark.slow

#: A seed whose first ten calls end in every way a call can end.
SEED = 78


def test_every_call_ends_in_a_result_or_a_clear_error_and_echoes_the_state_byte_for_byte() -> None:
    report = run(10, SEED, debug_every=3)
    assert report["verdict"] == [], report
    assert report["rounds"] > 250  # the rounds were answered, each checked by the server
    assert report["endings"] == {"failure": 8, "result": 1, "tool-error": 1}
