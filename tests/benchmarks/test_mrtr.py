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


def test_on_the_typescript_v2_server_host_receiver_is_held_to_the_typescript_client() -> None:
    runs: dict[str, Run] = {
        "embedded": {"results": {"http": client(2000.0, 1.3), "ts2-sse": client(1200.0, 1.5)}},
        "py": {"results": {"http": client(1800.0, 1.0)}},
        "ts": {"results": {"ts2-sse": client(1000.0, 1.1)}},
    }
    rows = {
        line.split(" | ")[0].lstrip("| "): line.split(" | ") for line in render({"mrtr": runs}).splitlines()
    }

    over = "MRTR, one form elicitation round, stateless HTTP, TS SDK v2 server answering SSE: {}"
    sse = rows[over.format("time per call p50 (µs)")]
    # embedded 1,200 against the TS Client's 1,000: the ratio is in the ÷ TS column, no Py SDK cell.
    assert sse[2] == "1,200" and sse[4] == "1,000" and sse[5] == "-"
    assert sse[7] == "- / 1.20" and sse[8] == "- / -"
    assert sse[9] == "<= 1.0x TS SDK v2 Client (TS SDK)" and sse[-1].rstrip(" |") == "- / NO"
    burst = rows[over.format("50 concurrent calls, wall (ms)")]
    assert burst[7] == "- / 1.00"
    # The 1.2 burst target is the mcp 2.3.0 server's; no protocol-auto or CLI line for this server.
    ratio = rows[
        over.format("50 concurrent wall ÷ (one call + server's own work: its process CPU time over the 50)")
    ]
    assert ratio[2] == "1.50" and ratio[-1].rstrip(" |") == "-"
    assert not any(
        "TS SDK v2 server" in title and ("auto" in title or "process (ms)" in title) for title in rows
    )
    # On the mcp 2.3.0 server the TS column is empty, and the JSON-answering server was not run.
    http = rows["MRTR, one form elicitation round, stateless HTTP: time per call p50 (µs)"]
    assert http[4] == "-" and http[8] == "- / 1.11"
    json_row = rows[over.replace("SSE", "JSON").format("time per call p50 (µs)")]
    assert json_row[2].startswith("n/a") and json_row[4].startswith("n/a")
