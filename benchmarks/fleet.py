"""The ``fleet`` scenario: three hosts, one PostgreSQL, two ``inbox serve``, a person answering (issue 36).

On a private PostgreSQL cluster (tests/postgres_cluster.py: initdb and pg_ctl
in a temporary directory), once with LISTEN/NOTIFY (``notify``) and once
with polling only (``poll``), each on a fresh database:

- ``host-receiver store migrate`` and ``people add ann`` (her token);
- two ``host-receiver inbox serve`` processes;
- three host processes (:mod:`benchmarks.fleet_host`: a host's ``StoreInbox``; processes, not tasks: each
  host of a fleet has its own connections, its own LISTEN and its own event loop),
  each adding :data:`SIZES` items with ``Store.add_item`` and waiting for each with
  ``Store.wait_answer`` (in ``poll`` the hosts open the store without its LISTEN relay);
- the person, here: lists the pending items through the JSON API (``GET api/items``)
  until every host's are there, then answers each (``POST api/items/ID/answer``), the
  two processes in turn, :data:`WINDOW` answers in flight.

Measured: items answered per second (first answer sent to last answered), one
listing's time, the hosts' ``add_item`` p50, and the delay from each answer to
its host (p50, p99; target p99 <= 100 ms with NOTIFY). :func:`summary` prints
them. Where PostgreSQL is not installed the scenario is skipped with a line
that says so.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx

from benchmarks.fleet_inbox import ANSWER_STAGES
from benchmarks.processes import stop
from benchmarks.table import Run, cell, phase, ratio
from tests.postgres_cluster import NO_POSTGRES, postgres_binaries, running_cluster

ROOT = Path(__file__).resolve().parent.parent
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
HOST_RECEIVER = ROOT / ".venv" / "bin" / "host-receiver"
HOSTS = 3
#: Answers in flight at once, over both inbox processes.
WINDOW = 8
#: LISTEN/NOTIFY, then polling only.
MODES = ("notify", "poll")
#: The target of the delivery p99 with NOTIFY (ms).
TARGET_P99_MS = 100.0
#: The delivery delay's stages, as benchmarks/fleet_host.py splits it.
STAGES = ("answer -> notified", "notified -> read begun", "read begun -> read", "read -> held", "by a poll")
#: Seconds for one mode's whole run before it is stopped.
DEADLINE = 300.0


@dataclass(frozen=True)
class Size:
    items: int  # per host


SIZES = {"smoke": Size(items=20), "full": Size(items=1000)}


def percentile(values: list[float], p: int) -> float:
    """The ``p``-th percentile (statistics.quantiles, n=100); the one value when there is one."""
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100)[p - 1]


def environment() -> dict[str, str]:
    """This checkout's code first, for every process started here."""
    return {**os.environ, "PYTHONPATH": str(ROOT)}


async def cli(*args: str) -> str:
    """``host-receiver ARGS`` to its end; its stdout (an error names its last stderr line)."""
    done = await anyio.run_process(
        [str(HOST_RECEIVER), *args], env=environment(), cwd=ROOT, check=False, stdin=subprocess.DEVNULL
    )
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines() or [""]
        raise RuntimeError(f"host-receiver {args[0]} {args[1]}: exit {done.returncode}: {said[-1][:200]}")
    return done.stdout.decode().strip()


#: What copies a process's stderr into its log, to run beside it.
Drain = Callable[[], Coroutine[Any, Any, None]]


async def inbox_serve(url: str, log: Path, answers: Path) -> tuple[anyio.abc.Process, str, Drain]:
    """``host-receiver inbox serve`` on a free loopback port (through :mod:`benchmarks.fleet_inbox`,
    which writes each answer's stages inside it to ``answers``): the process, its address, and what
    copies its stderr into ``log`` (to run beside it)."""
    await anyio.Path(answers).unlink(missing_ok=True)
    serve = ["inbox", "serve", "--store", url, "--listen", "127.0.0.1:0"]
    process = await anyio.open_process(
        [str(VENV_PYTHON), "-m", "benchmarks.fleet_inbox", "--answers-out", str(answers), *serve],
        env=environment(),
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    assert process.stderr is not None
    line = b""
    with anyio.fail_after(60):
        while not line.endswith(b"\n"):
            line += await process.stderr.receive(1)
    text = line.decode(errors="replace").strip()
    if not text.startswith("inbox: http://"):
        await stop(process)
        raise RuntimeError(f"inbox serve printed {text[:200]!r}")

    async def drain() -> None:  # keep its stderr flowing into the log
        assert process.stderr is not None
        with log.open("ab") as out:
            async for chunk in process.stderr:
                out.write(chunk)

    return process, text.removeprefix("inbox: ").rstrip("/"), drain


async def answer_all(clients: list[httpx.AsyncClient], expected: int, deadline: float) -> dict[str, Any]:
    """List until ``expected`` items are pending, then answer each; the timings."""
    listed: list[dict[str, Any]] = []
    list_ms: list[float] = []
    with anyio.fail_after(deadline):
        while len(listed) < expected:
            started = time.perf_counter()
            response = await clients[len(list_ms) % len(clients)].get("/api/items")
            response.raise_for_status()
            list_ms.append((time.perf_counter() - started) * 1e3)
            listed = response.json()["pending"]
            if len(listed) < expected:
                await anyio.sleep(0.2)
    ids = [item["id"] for item in listed]
    failures: list[str] = []
    limiter = anyio.Semaphore(WINDOW)

    async def answer(number: int, item_id: str) -> None:
        async with limiter:
            body = {"action": "accept", "content": {"name": f"ann-{number}"}}
            response = await clients[number % len(clients)].post(f"/api/items/{item_id}/answer", json=body)
            if response.status_code != 200:
                failures.append(f"answer {item_id}: {response.status_code} {response.text[:100]}")

    started = time.perf_counter()
    with anyio.fail_after(deadline):
        async with anyio.create_task_group() as group:
            for number, item_id in enumerate(ids):
                group.start_soon(answer, number, item_id)
    seconds = time.perf_counter() - started
    result: dict[str, Any] = {
        "answered": len(ids) - len(failures),
        "answered_per_s": (len(ids) - len(failures)) / seconds,
        "list_ms": list_ms[-1],
        "listings": len(list_ms),
    }
    if failures:
        result["failure"] = f"{len(failures)} answers failed: {failures[0]}"
    return result


async def run_mode(url: str, mode: str, size: Size, workdir: Path) -> dict[str, Any]:
    """One mode on the empty database ``url``: the hosts' and the person's measurements."""
    await cli("store", "migrate", "--store", url)
    token = await cli("people", "add", "ann", "--store", url)
    processes: list[anyio.abc.Process] = []
    outs = [workdir / f"fleet-{mode}-host-{n}.json" for n in range(HOSTS)]
    answers = [workdir / f"fleet-{mode}-inbox-{n}.answers" for n in range(2)]
    result: dict[str, Any] = {}
    try:
        async with anyio.create_task_group() as group:
            addresses = []
            for n, answered in enumerate(answers):
                log = workdir / f"fleet-{mode}-inbox-{n}.err"
                process, address, drain = await inbox_serve(url, log, answered)
                processes.append(process)
                addresses.append(address)
                group.start_soon(drain)
            hosts = []
            for n, out in enumerate(outs):
                out.unlink(missing_ok=True)
                command = [str(VENV_PYTHON), "-m", "benchmarks.fleet_host", "--store", url]
                command += ["--host", f"worker-{n + 1}", "--items", str(size.items), "--out", str(out)]
                command += ["--deadline", str(DEADLINE), *(["--no-listen"] if mode == "poll" else [])]
                err = (workdir / f"fleet-{mode}-host-{n}.err").open("ab")
                host = await anyio.open_process(command, env=environment(), cwd=ROOT, stderr=err)
                err.close()
                processes.append(host)
                hosts.append(host)
            headers = {"Authorization": f"Bearer {token}"}
            limits = httpx.Limits(max_connections=WINDOW)
            clients = [
                httpx.AsyncClient(base_url=a, headers=headers, timeout=60, limits=limits) for a in addresses
            ]
            try:
                result = await answer_all(clients, HOSTS * size.items, DEADLINE)
            finally:
                for client in clients:
                    await client.aclose()
            with anyio.move_on_after(DEADLINE):
                for host in hosts:
                    await host.wait()
            group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            for process in processes:
                await stop(process)
    delays: list[float] = []
    adds: list[float] = []
    stages: dict[str, list[float]] = {stage: [] for stage in STAGES}
    for out in outs:
        host_result: dict[str, Any] = (
            json.loads(out.read_text()) if out.exists() else {"failure": f"{out.name}: no result"}
        )
        if "failure" in host_result:
            result.setdefault("failure", f"{host_result.get('host', out.name)}: {host_result['failure']}")
            continue
        delays += host_result["delivery_ms"]
        adds += host_result["add_ms"]
        for stage in STAGES:
            stages[stage] += host_result.get("stages_ms", {}).get(stage, [])
    result |= {
        "items": HOSTS * size.items,
        "delivered": len(delays),
        "delivery_p50_ms": percentile(delays, 50),
        "delivery_p99_ms": percentile(delays, 99),
        "add_p50_ms": percentile(adds, 50),
        "stages": {
            stage: {"p50_ms": percentile(v, 50), "p99_ms": percentile(v, 99), "n": len(v)}
            for stage, v in stages.items()
        },
        "answer_stages": answer_stages(answers),
    }
    return result


def answer_stages(answers: list[Path]) -> dict[str, dict[str, float]]:
    """Each answer's stages inside ``inbox serve`` (:data:`benchmarks.fleet_inbox.ANSWER_STAGES`),
    from the lines the inbox processes wrote: p50, p99 and how many (ms)."""
    split: dict[str, list[float]] = {name: [] for name, _, _ in ANSWER_STAGES}
    for path in answers:
        lines = path.read_text().splitlines() if path.exists() else []
        for marks in map(json.loads, lines):
            for name, start, end in ANSWER_STAGES:
                if start in marks and end in marks:
                    split[name].append((marks[end] - marks[start]) * 1e3)
    return {
        name: {"p50_ms": percentile(v, 50), "p99_ms": percentile(v, 99), "n": len(v)}
        for name, v in split.items()
    }


async def run_fleet(size: str, workdir: Path, *, items: int | None = None) -> dict[str, Any]:
    """Both modes on one private cluster: ``{mode: {"results": ...}}``, or ``{"skipped": why}``;
    ``items`` waiting items per host instead of the size's."""
    binaries = postgres_binaries()
    if binaries is None:
        print(f"  fleet    skipped: {NO_POSTGRES}", file=sys.stderr)
        return {"skipped": NO_POSTGRES}
    runs: dict[str, Any] = {}
    with running_cluster(binaries) as cluster:
        for mode in MODES:
            started = time.perf_counter()
            try:
                url = cluster.url(cluster.new_database())
                measured = await run_mode(url, mode, Size(items) if items else SIZES[size], workdir)
            except Exception as exc:  # a failed run is reported, the other goes on
                measured = {"failure": f"{type(exc).__name__}: {exc}"}
            run: dict[str, Any] = {"results": {k: v for k, v in measured.items() if k != "failure"}}
            if "failure" in measured:
                run["failure"] = measured["failure"]
            runs[mode] = run
            seconds = time.perf_counter() - started
            print(f"  fleet    {mode:14} {seconds:6.1f} s {run.get('failure', '')}", file=sys.stderr)
    return runs


def summary(runs: dict[str, Any]) -> str:
    """The fleet's figures as lines (NOTIFY beside polling), or the line saying why it was skipped."""
    if "skipped" in runs:
        return f"Fleet on PostgreSQL: skipped ({runs['skipped']})"
    notify = runs.get("notify", {}).get("results", {})
    poll = runs.get("poll", {}).get("results", {})
    items = notify.get("items") or poll.get("items") or 0
    lines = [f"Fleet on PostgreSQL: {HOSTS} hosts x {items // HOSTS:,} items, 2 inbox serve, one person"]

    def figure(run: dict[str, Any], key: str, digits: int = 1) -> str:
        value = run.get(key)
        return "n/a" if value is None else f"{value:,.{digits}f}"

    for mode, run in (("LISTEN/NOTIFY", notify), ("polling only", poll)):
        p99 = run.get("delivery_p99_ms")
        met = ""
        if mode == "LISTEN/NOTIFY":
            verdict = "n/a" if p99 is None else ("yes" if p99 <= TARGET_P99_MS else "NO")
            met = f" (target p99 <= {TARGET_P99_MS:g} ms: {verdict})"
        lines.append(
            f"- {mode}: answered {figure(run, 'answered_per_s')} items/s; answer -> host p50 "
            f"{figure(run, 'delivery_p50_ms')} ms, p99 {figure(run, 'delivery_p99_ms')} ms{met}; "
            f"one listing of every item {figure(run, 'list_ms')} ms; "
            f"add_item p50 {figure(run, 'add_p50_ms', 2)} ms"
        )
    for mode, run in (("LISTEN/NOTIFY", notify), ("polling only", poll)):
        split = [
            f"{stage} p50 {v['p50_ms']:,.1f} / p99 {v['p99_ms']:,.1f} ms (n={v['n']})"
            for stage, v in run.get("stages", {}).items()
            if v["n"]
        ]
        if split:
            lines.append(f"  {mode} stages: " + "; ".join(split))
        inside = [
            f"{stage} p50 {v['p50_ms']:,.1f} / p99 {v['p99_ms']:,.1f} ms"
            for stage, v in run.get("answer_stages", {}).items()
            if v["n"]
        ]
        if inside:
            lines.append(f"  {mode} the answer inside inbox serve: " + "; ".join(inside))
    for mode in MODES:
        failure = runs.get(mode, {}).get("failure")
        if failure:
            lines.append(f"- {mode} failed: {failure}")
    return "\n".join(lines)


def store_cost(runs: Mapping[str, Run], with_store: str) -> str:
    """The in-memory path beside a shared store: CreateTaskResult p50, sequential, stdio, the CLI.

    ``cli`` runs with the default ``--store memory``, which opens no store at all
    (a host with it is the same as one without a store); ``with_store`` runs with
    a SQLite file as its shared store, in the same rounds.
    """
    read = phase("create_seq", "p50_us")
    memory = read(runs["cli"]) if "cli" in runs else None
    shared = read(runs[with_store]) if with_store in runs else None
    return (
        "The store's cost: CreateTaskResult p50, sequential, stdio, the CLI (µs)\n"
        f"- --store memory (the default; opens no store, the same as none): {cell(memory, 0)}\n"
        f"- --store sqlite:///FILE (a shared store opened beside it): {cell(shared, 0)} "
        f"({ratio(shared, memory)}); target: within noise"
    )
