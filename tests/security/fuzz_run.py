"""Run the fuzz server under ``host-receiver run`` and judge the run (the test and the long command share it).

The long run, documented in docs/security.md::

    .venv/bin/python -m tests.security.fuzz_run --count 100000 --seed 1

prints the report as JSON and exits 0 when the run found nothing: 0 crashes
(the command exited 0 and logged no traceback, and no answer was a bare
"Internal error"), 0 hangs (everything owed came within the wait, and the
client still answered a final ping and tasks/list), 0 unanswered requests,
0 answers that were not owed or not schema-valid.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.cli_command import CLI

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "tests" / "servers" / "fuzz_server.py"


def run(count: int, seed: int, *, wait: float = 30.0, log_level: str = "WARNING") -> dict[str, Any]:
    """One run; the server's report plus what the command did (``verdict`` lists what went wrong)."""
    with tempfile.TemporaryDirectory() as scratch:
        report_path = Path(scratch) / "report.json"
        server = [sys.executable, str(SERVER), "--seed", str(seed), "--count", str(count)]
        server += ["--report", str(report_path), "--wait", str(wait)]
        command = [*CLI, "--log-level", log_level, "run", "--approve", "auto", "--elicit", "defaults"]
        env = {**os.environ, "HOST_RECEIVER_CONFIG": str(Path(scratch) / "absent.toml")}
        started = time.monotonic()
        proc = subprocess.run(
            [*command, "--", *server],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=wait + 60 + count / 100,  # a hung command fails the run instead of blocking it
        )
        seconds = time.monotonic() - started
        report: dict[str, Any] = (
            json.loads(report_path.read_text()) if report_path.exists() else {"problems": ["no report"]}
        )
    stderr = proc.stderr.decode("utf-8", "replace")
    report["command_exit"] = proc.returncode
    report["command_seconds"] = round(seconds, 2)
    report["tracebacks"] = stderr.count("Traceback")
    report["stderr_tail"] = stderr[-2000:] if proc.returncode or report["tracebacks"] else ""
    report["raw_escapes_on_stderr"] = proc.stderr.count(b"\x1b") + proc.stderr.count("\u202e".encode())
    report["verdict"] = verdict(report)
    return report


def verdict(report: dict[str, Any]) -> list[str]:
    """What went wrong in a run (empty: 0 crashes, 0 hangs, 0 unanswered)."""
    wrong = []
    if report.get("command_exit") != 0:
        wrong.append(f"the command exited {report.get('command_exit')}")
    if report.get("tracebacks"):
        wrong.append(f"{report['tracebacks']} tracebacks logged")
    if report.get("unanswered", 1):
        wrong.append(f"{report.get('unanswered')} requests unanswered")
    if not report.get("still_serving"):
        wrong.append("the client did not answer the final ping and tasks/list")
    if report.get("problems"):
        wrong.append(f"{len(report['problems'])} bad answers")
    if report.get("raw_escapes_on_stderr"):
        wrong.append("raw escape bytes on stderr")
    return wrong


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--count", type=int, default=100_000, help="frames to send (default 100000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--wait", type=float, default=60.0, help="seconds to wait for what is owed")
    parser.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING"])
    args = parser.parse_args()
    report = run(args.count, args.seed, wait=args.wait, log_level=args.log_level)
    print(json.dumps(report, indent=2))
    return 0 if not report["verdict"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
