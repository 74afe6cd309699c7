"""Run ``host-receiver run --call`` against the hostile 2026-07-28 server, call after call, and judge each.

Each call is its own process (``--call`` calls once), on
tests/servers/modern_fuzz_server.py playing :func:`tests.security.fuzz_rounds.script`
for ``(seed, call)``. A call passes when: the command ended within its time
(nothing hangs); it exited as the script's ending says (0 with the server's
result on stdout, 1 for ``isError``, 2 with a clear error on stderr that
names what went wrong, never a bare "Internal error"); no traceback was
logged; stdout and stderr hold no raw ESC, BEL, C1 or bidi control; and the
server saw every round answered as it asked (``requestState`` byte for
byte, every key, every cursor) and no request it did not expect.

The long run, documented in docs/security.md::

    .venv/bin/python -m tests.security.fuzz_rounds_run --calls 200 --seed 1

prints the report as JSON and exits 0 when every call passed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tests.cli_command import CLI
from tests.security.fuzz_rounds import MAX_ROUNDS, script
from tests.security.fuzz_run import ROOT

SERVER = ROOT / "tests" / "servers" / "modern_fuzz_server.py"
#: Bytes that must never reach a terminal raw: ESC, BEL, NUL, CSI (C1, in UTF-8), RLO, LRI.
RAW = {
    "ESC": b"\x1b",
    "BEL": b"\x07",
    "NUL": b"\x00",
    "C1": "\x9b".encode(),
    "RLO": "\u202e".encode(),
    "LRI": "\u2066".encode(),
}
#: Seconds one call may take before it counts as hung (generous: a 2-core machine, shared).
PATIENCE = 120.0
EXIT = {"result": 0, "tool-error": 1, "failure": 2}


def run_call(seed: int, call: int, *, log_level: str = "WARNING") -> dict[str, Any]:
    """One call in its own process; what it did, and ``wrong``: what went wrong (empty: it passed)."""
    plan = script(seed, call)
    with tempfile.TemporaryDirectory() as scratch:
        report_path = Path(scratch) / "report.json"
        server = [
            sys.executable,
            str(SERVER),
            "--seed",
            str(seed),
            "--call",
            str(call),
            "--report",
            str(report_path),
        ]
        command = [*CLI, "--log-level", log_level, "run", "--approve", "auto", "--elicit", "defaults"]
        command += ["--max-input-rounds", str(MAX_ROUNDS), "--root", scratch, "--call", "fuzz"]
        env = {**os.environ, "HOST_RECEIVER_CONFIG": str(Path(scratch) / "absent.toml")}
        started = time.monotonic()
        try:
            proc = subprocess.run(
                [*command, "--", *server],
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=PATIENCE,
            )
        except subprocess.TimeoutExpired:
            return {"call": call, "ending": plan.ending, "wrong": [f"hung: no end within {PATIENCE:g} s"]}
        seconds = time.monotonic() - started
        seen: dict[str, Any] = json.loads(report_path.read_text()) if report_path.exists() else {}
    wrong = judge(plan.ending, plan.words, plan.steps[-1].result, proc, seen, plan.rounds)
    return {
        "call": call,
        "ending": plan.ending,
        "rounds": seen.get("rounds_answered", 0),
        "seconds": round(seconds, 2),
        "longest_wait": seen.get("longest_wait"),
        "wrong": wrong,
    }


def judge(
    ending: str,
    words: tuple[str, ...],
    last: dict[str, Any] | None,
    proc: subprocess.CompletedProcess[bytes],
    seen: dict[str, Any],
    rounds: int,
) -> list[str]:
    """What went wrong in one call (rules in the module docstring)."""
    wrong = []
    stderr = proc.stderr.decode("utf-8", "replace")
    if proc.returncode != EXIT[ending]:
        wrong.append(f"exit {proc.returncode}, not {EXIT[ending]} ({ending}): {stderr[-500:]!r}")
    for name, raw in RAW.items():
        if raw in proc.stdout or raw in proc.stderr:
            wrong.append(f"raw {name} on {'stdout' if raw in proc.stdout else 'stderr'}")
    if "Traceback" in stderr or "Internal error" in stderr:
        wrong.append(f"a crash: {stderr[-1000:]!r}")
    if ending == "failure":
        if proc.stdout or "host-receiver: fuzz failed: " not in stderr:
            wrong.append(f"no clear error: {stderr[-500:]!r}")
        wrong += [f"the error does not say {w!r}: {stderr[-500:]!r}" for w in words if w not in stderr]
    elif proc.returncode in (0, 1):
        printed = json.loads(proc.stdout)
        if last is None or printed["content"] != last["content"]:
            wrong.append("the printed result is not the server's")
    if not seen:
        wrong.append("the server wrote no report")
    else:
        wrong += [f"server: {p}" for p in seen["problems"]]
        if seen["rounds_answered"] != rounds or seen["steps_left"] or seen["pages_left"]:
            wrong.append(
                f"{seen['rounds_answered']} of {rounds} rounds answered, {seen['steps_left']} steps left"
            )
    return wrong


def run(calls: int, seed: int, *, debug_every: int = 0) -> dict[str, Any]:
    """``calls`` calls of run ``seed`` (every ``debug_every``-th at ``--log-level DEBUG``); the report."""
    results = []
    for call in range(calls):
        level = "DEBUG" if debug_every and call % debug_every == debug_every - 1 else "WARNING"
        results.append(run_call(seed, call, log_level=level))
    failed = [r for r in results if r["wrong"]]
    return {
        "seed": seed,
        "calls": calls,
        "rounds": sum(r.get("rounds", 0) for r in results),
        "endings": dict(Counter(r["ending"] for r in results)),
        "longest_wait": max((r.get("longest_wait") or 0 for r in results), default=0),
        "failed": failed[:20],
        "verdict": [f"call {r['call']}: {w}" for r in failed for w in r["wrong"]][:50],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--calls", type=int, default=200, help="calls to make, one process each (default 200)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--debug-every", type=int, default=4, help="every Nth call at --log-level DEBUG")
    args = parser.parse_args()
    report = run(args.calls, args.seed, debug_every=args.debug_every)
    print(json.dumps(report, indent=2))
    return 0 if not report["verdict"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
