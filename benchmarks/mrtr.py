"""The ``mrtr`` scenario: multi-round-trip input (2026-07-28), host-receiver against each SDK's own client.

Two servers, whose ``form`` and ``sample`` tools each need exactly one round
of input, and the "transports" of this scenario (:data:`TRANSPORTS`):

- ``stdio`` and ``http``: benchmarks/peers/mrtr_server.py (mcp 2.3.0
  ``MCPServer``), over stdio (the client starts the server as its child) and
  over stateless Streamable HTTP on loopback;
- ``ts2-sse`` and ``ts2-json``: benchmarks/peers/ts2_mrtr_server.mjs (the
  TypeScript SDK v2, ``@modelcontextprotocol/server`` 2.4.0) over stateless
  Streamable HTTP, answering every POST with an SSE stream or a JSON body.

Over HTTP the driver starts a fresh server for each client run and passes its
URL. Every client runs in its own process and makes the same calls
(:mod:`benchmarks.mrtr_load`):

- ``embedded``: benchmarks/mrtr_host.py, the ``Host`` API, protocol 2026-07-28 (every transport);
- ``embedded+auto``: the same with protocol ``auto`` (first round only, mcp 2.3.0 server);
- ``py``: benchmarks/peers/py2_mrtr_client.py, ``mcp.Client`` with plain callbacks (mcp 2.3.0 server);
- ``ts``: benchmarks/peers/ts2_mrtr_client.mjs, ``@modelcontextprotocol/client`` 2.4.0's
  ``Client`` with request handlers (TS v2 server);
- ``cli-process``: one ``host-receiver run --call form`` process per transport of the
  mcp 2.3.0 server, timed whole (start-up included: a sanity line, first round only).

:func:`run_mrtr` returns every client's results per round; the driver takes
the medians. The smoke run starts the clients side by side (its figures mean
nothing).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from benchmarks.mrtr_load import FORM_TEXT, SIZES
from benchmarks.processes import stop

ROOT = Path(__file__).resolve().parent.parent
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
PY2_PYTHON = ROOT / ".peers" / "py2" / "bin" / "python"
PEERS = ROOT / "benchmarks" / "peers"
SERVER = [str(PY2_PYTHON), str(PEERS / "mrtr_server.py")]
#: The runs of the first round only, and the receiver each needs.
EXTRAS = {"embedded+auto": "embedded", "cli-process": "cli"}
ON_MCP2 = ("embedded", "py", *EXTRAS)
#: Each transport of the scenario: the command of its HTTP server (``None``: stdio, the
#: client starts :data:`SERVER`) and the runs made on it.
TRANSPORTS: dict[str, tuple[list[str] | None, tuple[str, ...]]] = {
    "stdio": (None, ON_MCP2),
    "http": ([*SERVER, "--port", "0"], ON_MCP2),
    **{
        f"ts2-{framing}": (
            ["node", str(PEERS / "ts2_mrtr_server.mjs"), "--framing", framing, "--port", "0"],
            ("embedded", "ts"),
        )
        for framing in ("sse", "json")
    },
}
#: Seconds one client run (or the server's start) may take before it is killed.
DEADLINE = 300.0


def client_command(label: str, size: str, out: Path) -> list[str]:
    """The client process of ``label`` (transport arguments still to add)."""
    if label in ("embedded", "embedded+auto"):
        protocol = "auto" if label == "embedded+auto" else "2026-07-28"
        module = ["-m", "benchmarks.mrtr_host", "--protocol", protocol]
        return [str(VENV_PYTHON), *module, "--size", size, "--out", str(out)]
    if label == "py":
        return [str(PY2_PYTHON), str(PEERS / "py2_mrtr_client.py"), "--size", size, "--out", str(out)]
    if label == "ts":
        sizes = json.dumps(vars(SIZES[size]))
        return ["node", str(PEERS / "ts2_mrtr_client.mjs"), "--sizes", sizes, "--out", str(out)]
    if label == "cli-process":
        hooks = ["--approve", "auto", "--elicit", "defaults", "--provider", "echo"]
        host = str(ROOT / ".venv" / "bin" / "host-receiver")
        return [host, "run", "--protocol", "2026-07-28", *hooks, "--call", "form"]
    raise ValueError(f"unknown mrtr client {label!r}")


async def start_http_server(command: list[str]) -> tuple[anyio.abc.Process, str]:
    """The stateless HTTP server ``command`` on a free loopback port, and its URL once it accepts."""
    process = await anyio.open_process(command, cwd=ROOT, stderr=subprocess.DEVNULL)
    assert process.stdout is not None
    line = b""
    try:
        with anyio.fail_after(60):
            while not line.endswith(b"\n"):
                chunk = await process.stdout.receive(1)
                line += chunk
    except BaseException:
        await stop(process)
        raise
    return process, line.decode().split()[-1]


async def run_client(label: str, transport: str, size: str, workdir: Path) -> dict[str, Any]:
    """One client on one transport: its measurements, or ``failure``."""
    out = workdir / f"mrtr-{label}-{transport}.json"
    out.unlink(missing_ok=True)
    command = client_command(label, size, out)
    server = None
    http_server = TRANSPORTS[transport][0]
    if http_server is not None:
        server, url = await start_http_server(http_server)
        command += ["--url", url]
    else:
        command += ["--", *SERVER]
    started = time.perf_counter()
    try:
        with anyio.move_on_after(DEADLINE) as scope:
            finished = await anyio.run_process(
                command, cwd=ROOT, check=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
    finally:
        if server is not None:
            await stop(server)
    seconds = time.perf_counter() - started
    if scope.cancelled_caught:
        result: dict[str, Any] = {"failure": "killed: the run did not end in time"}
    elif label == "cli-process":
        result = cli_result(finished, seconds)
    else:
        result = json.loads(out.read_text()) if out.exists() else {}
        if finished.returncode != 0 and "failure" not in result:
            lines = finished.stderr.decode(errors="replace").strip().splitlines() or [""]
            result["failure"] = f"exit status {finished.returncode}: {lines[-1][:200]}"
    if "results" in result and result["results"].get("errors"):
        result["failure"] = f"{result['results']['errors']} calls failed: {result['results']['first_error']}"
    print(
        f"  mrtr     {label:14} {transport:8} {seconds:6.1f} s {result.get('failure', '')}", file=sys.stderr
    )
    return result


def cli_result(finished: subprocess.CompletedProcess[bytes], seconds: float) -> dict[str, Any]:
    """The CLI's one call: the process's wall time, if it printed the right result."""
    try:
        result = json.loads(finished.stdout)
        text = result["content"][0]["text"]
    except (ValueError, LookupError, TypeError):
        text = None
    if finished.returncode != 0 or text != FORM_TEXT:
        return {"failure": f"exit status {finished.returncode}, printed {finished.stdout[:200]!r}"}
    return {"results": {"process_ms": seconds * 1e3}}


async def run_into(run: dict[str, Any], label: str, transport: str, size: str, workdir: Path) -> None:
    """Run one client on one transport into its run of a round (the first failure stands)."""
    result = await run_client(label, transport, size, workdir)
    if "results" in result:
        run["results"][transport] = result["results"]
    if "failure" in result:
        run.setdefault("failure", f"{transport}: {result['failure']}")


async def run_mrtr(
    receivers: list[str],
    transports: list[str],
    size: str,
    workdir: Path,
    rounds: int,
    *,
    concurrently: bool,
) -> dict[str, list[dict[str, Any]]]:
    """Every client chosen by ``receivers`` on each of ``transports``, ``rounds`` times, interleaved.

    Within a round the clients take turns on one transport, then on the
    next, so that the runs compared are close in time (round k starts k
    clients further on). Returns each label's rounds, each round
    ``{"results": {transport: ...}}`` with ``failure`` if a transport failed.
    ``embedded+auto`` and ``cli-process`` run in the first round only, on
    the mcp 2.3.0 server: they are reported, not compared.
    """
    done: dict[str, list[dict[str, Any]]] = {}
    timed: list[str] = [label for label in ("embedded", "py", "ts") if label in receivers]
    extras = [label for label, needs in EXTRAS.items() if needs in receivers]
    for k in range(rounds):
        order = timed[k % len(timed) :] + timed[: k % len(timed)] if timed else []
        order += extras if k == 0 else []
        runs: dict[str, dict[str, Any]] = {label: {"results": {}} for label in order}
        for transport in transports:
            on = [label for label in order if label in TRANSPORTS[transport][1]]
            if concurrently:
                async with anyio.create_task_group() as group:
                    for label in on:
                        group.start_soon(run_into, runs[label], label, transport, size, workdir)
            else:
                for label in on:
                    await run_into(runs[label], label, transport, size, workdir)
        for label, run in runs.items():
            if run["results"] or "failure" in run:
                done.setdefault(label, []).append(run)
    return done
