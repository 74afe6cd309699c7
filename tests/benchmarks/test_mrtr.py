"""The mrtr benchmark's bookkeeping: checked calls, the server's work, the table (no timing asserted)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from benchmarks.mrtr_load import FORM_TEXT, measure
from benchmarks.table import Run, render


def test_every_call_is_checked_and_the_servers_work_is_the_difference_of_its_stats() -> None:
    served = {"cpu_s": 0.0, "wait_s": 0.0, "handled": 0, "handler_s": 0.0}
    answers = iter(["Ada 36", "wrong", "boom"])

    async def call(tool: str) -> str:
        if tool == "stats":
            return json.dumps(served)
        served["cpu_s"] += 0.002
        served["handled"] += 2
        if tool == "form":
            answer = next(answers, FORM_TEXT)
            if answer == "boom":
                raise ExceptionGroup("round", [RuntimeError("refused")])
            return answer
        return "hi"

    measured = anyio.run(measure, call, {"form": FORM_TEXT, "sample": "hi"}, "smoke")
    assert measured["errors"] == 2
    assert measured["first_error"] == "form returned 'wrong', not 'Ada 36'"
    for tool in ("form", "sample"):
        one = measured[tool]["sequential"]
        assert one["n"] == 5
        assert one["server_requests_per_call"] == 2
        assert round(one["server_cpu_us_per_call"]) == 2000
        burst = measured[tool]["concurrent"]
        assert burst["concurrency"] == 5
        assert round(burst["server_cpu_ms"]) == 10  # five calls of 2 ms each
        assert burst["ratio"] == pytest.approx(burst["wall_ms"] / burst["bound_ms"])


def client(p50: float, ratio: float) -> dict[str, Any]:
    tool = {"sequential": {"p50_us": p50}, "concurrent": {"wall_ms": 100.0, "ratio": ratio}}
    return {"form": tool, "sample": tool}


def test_the_table_compares_host_receiver_with_the_mcp2_client_per_transport_and_tool() -> None:
    runs: dict[str, Run] = {
        "embedded": {"results": {"stdio": client(900.0, 1.1), "http": client(2000.0, 1.3)}},
        "py": {"results": {"stdio": client(1000.0, 1.0), "http": client(1800.0, 1.0)}},
        "embedded+auto": {"results": {"stdio": client(950.0, 1.0)}, "failure": "http: killed"},
        "cli-process": {"results": {"stdio": {"process_ms": 3000.0}, "http": {"process_ms": 2500.0}}},
    }
    rows = {
        line.split(" | ")[0].lstrip("| "): line.split(" | ") for line in render({"mrtr": runs}).splitlines()
    }

    stdio = rows["MRTR, one form elicitation round, stdio: time per call p50 (µs)"]
    assert stdio[1:3] == ["-", "900"] and stdio[5] == "1,000"
    assert stdio[8] == "- / 0.90" and stdio[-1].rstrip(" |") == "- / yes"
    http = rows["MRTR, one sampling round, stateless HTTP: time per call p50 (µs)"]
    assert http[8] == "- / 1.11" and http[-1].rstrip(" |") == "- / NO"

    concurrent = (
        "MRTR, one form elicitation round, {}: 50 concurrent wall ÷ "
        "(one call + server's own work: its process CPU time over the 50)"
    )
    assert rows[concurrent.format("stdio")][-1].rstrip(" |") == "- / yes"
    assert rows[concurrent.format("stateless HTTP")][-1].rstrip(" |") == "- / NO"

    auto = "MRTR, one form elicitation round, {}: time per call p50 with protocol auto (µs)"
    assert rows[auto.format("stdio")][2] == "950"
    assert rows[auto.format("stateless HTTP")][2] == "n/a (http: killed)"
    cli = rows["MRTR, one form round, stdio: one `host-receiver run --call` process (ms)"]
    assert cli[1:3] == ["3,000", "-"]
