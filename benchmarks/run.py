"""The driver: every scenario against every receiver, one after the other, then the table.

``.venv/bin/python -m benchmarks [--smoke] [--scenarios a,b] [--receivers x,y] [--rounds N] [--json PATH]``

For each scenario and receiver the driver starts the receiver (which starts
the requestor as its stdio child), waits for it to exit, and reads the
requestor's JSON. The latency and scale scenarios run ``--rounds`` times
(3 by default), the receivers interleaved, and every figure is the median of
its rounds. Receivers:

- ``cli``: ``host-receiver run --approve auto --elicit defaults --max-active-tasks 5000
  --max-stored-tasks 250000 --provider P -- requestor``;
- ``embedded``: :mod:`benchmarks.embedded` (the ``Host``/``Receiver`` API, limits raised);
- ``echo``: :mod:`benchmarks.echo_limit`, the transport limit;
- ``ts``: the TypeScript SDK's ``Client`` (``benchmarks/peers/ts_receiver.mjs``; in the
  ``mrtr`` scenario the SDK v2's, ``benchmarks/peers/ts2_mrtr_client.mjs``);
- ``py``: the Python SDK's ``ClientSession`` (``benchmarks/peers/py_receiver.py``).

The slow scenarios give host-receiver an OpenAI-compatible provider entry (a
temporary config file) that points at ``tests/fake_openai.py`` serving on
127.0.0.1 with a fixed delay; the others use the offline echo provider. Every
run is bounded by the requestor's ``--deadline`` and by a kill here.

The ``slow`` scenario also runs the CLI once more with the same provider on
httpx's own HTTP pool (``http_transport = "httpx"``, run ``cli+httpx``), and
sends the same requests straight to the fake provider with a bare client (the
floor), so one run compares both pools and the floor. Then, for each native
vendor backend (:data:`VENDORS`: Anthropic, Gemini), it runs the CLI with a
provider of that type against that vendor's fake (``tests/fake_anthropic.py``,
``tests/fake_gemini.py``, the same server speaking that wire format, with the
same delay; run ``cli+anthropic``, ``cli+gemini``) and sends the same requests
straight to that fake in its wire format (its floor, ``provider-floor+anthropic``
and so on).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlsplit

import anyio
import anyio.abc

from benchmarks.compare import run_compare
from benchmarks.fleet import run_fleet, store_cost, summary
from benchmarks.mrtr import TRANSPORTS as MRTR_TRANSPORTS
from benchmarks.mrtr import run_mrtr
from benchmarks.processes import stop
from benchmarks.requestor import SIZES
from benchmarks.table import CLI_HTTPX, PROVIDER_FLOOR, VENDORS, otel_cost, render

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
PEERS = ROOT / ".peers"
RECEIVERS = ("cli", "embedded", "echo", "ts", "py")
#: The slow scenario's extra CLI runs (``--backends``): httpx's own pool, then each vendor's backend.
SLOW_BACKENDS = ("httpx", *VENDORS)
#: The CLI without the OpenTelemetry API importable (as without the otel extra), and with the SDK
#: exporting in batches to a loopback endpoint: the latency scenario runs both beside ``cli``
#: (the API installed, no SDK), for docs/observability.md's cost figures.
CLI_NO_OTEL = "cli-no-otel"
CLI_OTEL_SDK = "cli+otel-sdk"
OTEL_RUNS = (CLI_NO_OTEL, CLI_OTEL_SDK)
#: The CLI with a shared store (a SQLite file): the latency scenario runs it beside ``cli``, whose
#: default ``--store memory`` opens no store at all (the same as none), for the fleet's
#: "in-memory path unchanged" figure (docs/fleet.md, "Figures").
CLI_SQLITE_STORE = "cli+sqlite-store"
WITHOUT_OTEL = (
    "import sys; sys.modules['opentelemetry'] = None; from host_receiver.cli import main; main(sys.argv[1:])"
)
#: ``--profile DIR``: the CLI under cProfile, its stats written to ``stats`` when it exits.
PROFILED = (
    "import cProfile, sys\nfrom host_receiver.cli import main\nprofile = cProfile.Profile()\n"
    "profile.enable()\ntry:\n    main(sys.argv[1:])\nfinally:\n    profile.disable()\n"
    "    profile.dump_stats({stats!r})\n"
)


@dataclass(frozen=True)
class Scenario:
    """One requestor scenario and the provider it needs."""

    name: str
    #: Seconds the provider takes per answer (0: the offline echo provider).
    delay: float = 0.0
    deadline: float = 240.0
    #: Also run the embedded receiver once more with tracemalloc on.
    traced: bool = False
    #: Run every receiver ``--rounds`` times, interleaved, and report medians.
    repeated: bool = False
    #: Over Streamable HTTP in this framing (``json`` or ``sse``), running ``requestor`` there.
    framing: str | None = None
    requestor: str = ""

    @property
    def runs(self) -> str:
        """The requestor's scenario."""
        return self.requestor or self.name

    def chosen(self, names: Sequence[str]) -> bool:
        """Named in ``names`` (an HTTP scenario also by its name without the framing)."""
        return self.name in names or (self.framing is not None and self.name.rpartition("-")[0] in names)


def scenarios(smoke: bool) -> list[Scenario]:
    return [
        Scenario("latency", deadline=120, repeated=True),
        Scenario("scale", deadline=200, repeated=True),
        Scenario("memory", deadline=400, traced=True),
        Scenario("slow", delay=1.0, deadline=180),  # httpx's pool takes about a minute (cli+httpx)
        Scenario("blocked", delay=3.0 if smoke else 25.0, deadline=120),
        *http_scenarios(),
        # Multi-round-trip input against the mcp 2.3.0 and TypeScript SDK v2 Clients: its own
        # servers and clients (benchmarks/mrtr.py), not the requestor.
        Scenario("mrtr", repeated=True),
        # Three hosts, two inbox serve and a person on PostgreSQL (benchmarks/fleet.py).
        Scenario("fleet"),
    ]


# --- Streamable HTTP (docs/performance.md, "Streamable HTTP") --------------------------

HTTP_FRAMINGS = ("json", "sse")
#: The tool whose call the ``sse`` framing runs in (benchmarks/http_requestor.py).
HTTP_TOOL = "benchmark"


def http_scenarios() -> list[Scenario]:
    """Latency over HTTP in each framing (``http-latency-json``, ``-sse``), scale in the json one.

    The scale scenario measures the store, which the framing does not touch,
    and filling 100,000 tasks one POST at a time is long: it runs once.
    """
    latency = [
        Scenario(f"http-latency-{framing}", deadline=200, repeated=True, framing=framing, requestor="latency")
        for framing in HTTP_FRAMINGS
    ]
    return [*latency, Scenario("http-scale-json", deadline=420, framing="json", requestor="scale")]


def http_target(framing: str, url: str) -> list[str]:
    """How a receiver is pointed at the requestor: its URL, and the tool call in ``sse`` framing."""
    return ["--url", url, *(["--call", HTTP_TOOL] if framing == "sse" else [])]


async def run_http(
    command: Callable[[list[str]], list[str]], ctx: Context, out: Path, label: str
) -> str | None:
    """Start the HTTP requestor, then the receiver ``command(target)`` pointed at it; a failure or None.

    The requestor prints its URL and then reads the receiver's pid on stdin.
    A receiver still running once the requestor is done is stopped (SIGTERM);
    one that exits with an error before it gives the requestor 5 s to notice.
    """
    assert ctx.scenario.framing is not None
    logs = ctx.workdir / f"{ctx.scenario.name}-{label}"
    server_log, receiver_log = Path(f"{logs}.requestor.err"), Path(f"{logs}.receiver.err")
    env = {**os.environ, "HOST_RECEIVER_CONFIG": str(ctx.config)}
    receiver: anyio.abc.Process | None = None
    failure = None
    with log_files(server_log, receiver_log) as (server_err, receiver_err):
        server = await anyio.open_process(requestor_command(ctx, out, None), cwd=ROOT, stderr=server_err)
        try:
            assert server.stdout is not None and server.stdin is not None
            url = ""
            with anyio.move_on_after(20):
                url = await read_line(server.stdout)
            if not url.startswith("http://"):
                return f"the requestor printed no URL: {last_line(server_log)}"
            receiver = await anyio.open_process(
                command(http_target(ctx.scenario.framing, url)),
                env=env,
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=receiver_err,
            )
            await server.stdin.send(f"{receiver.pid}\n".encode())
            with anyio.move_on_after(ctx.scenario.deadline + 30) as scope:
                async with anyio.create_task_group() as group:
                    group.start_soon(wait_then_cancel, server, group.cancel_scope, 0.0)
                    await receiver.wait()
                    if receiver.returncode != 0:
                        failure = f"receiver exit status {receiver.returncode}: {last_line(receiver_log)}"
                        await wait_then_cancel(server, group.cancel_scope, 5.0)
            if scope.cancelled_caught:
                failure = "killed: the run did not end in time"
        finally:
            for process in (receiver, server):
                if process is not None:
                    await stop(process)
    if server.returncode not in (0, None) and failure is None:
        failure = f"requestor exit status {server.returncode}: {last_line(server_log)}"
    return failure


async def wait_then_cancel(process: anyio.abc.Process, scope: anyio.CancelScope, limit: float) -> None:
    """Wait for ``process`` to exit (at most ``limit`` seconds if not 0), then cancel ``scope``."""
    with anyio.move_on_after(limit or math.inf):
        await process.wait()
    scope.cancel()


@contextmanager
def log_files(*paths: Path) -> Iterator[list[BinaryIO]]:
    """``paths`` opened for appending (every round of a run), for a process's stderr."""
    with ExitStack() as stack:
        yield [stack.enter_context(path.open("ab")) for path in paths]


async def read_line(stream: anyio.abc.ByteReceiveStream) -> str:
    """One line from ``stream`` (what came before it closed, if it closed first)."""
    line = b""
    while not line.endswith(b"\n"):
        try:
            line += await stream.receive(1)
        except anyio.EndOfStream:
            break
    return line.decode(errors="replace").strip()


def last_line(path: Path) -> str:
    lines = path.read_text(errors="replace").strip().splitlines() or [""]
    return lines[-1][:200]


@dataclass
class Context:
    """What every run of one scenario shares."""

    scenario: Scenario
    size: str
    workdir: Path
    config: Path
    provider: str
    #: The loopback OTLP/HTTP endpoint the CLI exports to in the ``cli+otel-sdk`` run.
    otlp_url: str = ""
    #: With ``--profile DIR``: the CLI runs under cProfile and writes its stats there.
    profile_dir: Path | None = None


def requestor_command(ctx: Context, out: Path, probe: Path | None) -> list[str]:
    command = [str(VENV_PYTHON), str(BENCH / "requestor.py")]
    if ctx.scenario.framing is not None:
        command = [str(VENV_PYTHON), "-m", "benchmarks.http_requestor", "--framing", ctx.scenario.framing]
    command += [
        "--scenario",
        ctx.scenario.runs,
        "--size",
        ctx.size,
        "--out",
        str(out),
        "--deadline",
        str(ctx.scenario.deadline),
    ]
    if probe is not None:
        command += ["--probe-fifo", str(probe)]
    return command


def receiver_command(receiver: str, ctx: Context, target: list[str], probe: Path | None) -> list[str]:
    """The receiver's command line; ``target`` points it at the requestor (``-- COMMAND`` or ``--url``)."""
    delay = str(ctx.scenario.delay)
    provider = ["--provider", ctx.provider]
    if receiver in ("cli", *OTEL_RUNS, CLI_SQLITE_STORE):
        host = [str(ROOT / ".venv" / "bin" / "host-receiver")]
        if receiver == CLI_NO_OTEL:
            host = [str(VENV_PYTHON), "-c", WITHOUT_OTEL]
        elif receiver == "cli" and ctx.profile_dir is not None:
            stats = ctx.profile_dir / f"{ctx.scenario.name}-cli-{ctx.provider}.prof"
            host = [str(VENV_PYTHON), "-c", PROFILED.format(stats=str(stats))]
        limits = ["--max-active-tasks", "5000", "--max-stored-tasks", "250000"]  # as embedded.py
        if receiver == CLI_SQLITE_STORE:
            limits += ["--store", f"sqlite:///{ctx.workdir / 'store.db'}"]
        return [
            *host,
            "run",
            "--approve",
            "auto",
            "--elicit",
            "defaults",
            *limits,
            *provider,
            *target,
        ]
    if receiver == "embedded":
        extra = ["--probe-fifo", str(probe)] if probe is not None else []
        return [str(VENV_PYTHON), str(BENCH / "embedded.py"), *provider, *extra, *target]
    if receiver == "echo":
        if ctx.scenario.framing is not None:
            return [str(VENV_PYTHON), "-m", "benchmarks.http_echo_limit", *target]
        return [str(VENV_PYTHON), str(BENCH / "echo_limit.py"), "--delay", delay, *target]
    if receiver == "ts":
        return ["node", str(BENCH / "peers" / "ts_receiver.mjs"), "--delay", delay, *target]
    if receiver == "py":
        python = PEERS / "py" / "bin" / "python"
        return [str(python), str(BENCH / "peers" / "py_receiver.py"), "--delay", delay, *target]
    raise ValueError(f"unknown receiver {receiver!r}")


async def run_one(
    receiver: str, ctx: Context, *, traced: bool = False, label: str | None = None
) -> dict[str, Any]:
    """Start one receiver on one scenario; return the requestor's measurements."""
    label = label or (f"{receiver}+tracemalloc" if traced else receiver)
    out = ctx.workdir / f"{ctx.scenario.name}-{label}.json"
    probe: Path | None = None
    if traced:
        probe = ctx.workdir / f"{label}.fifo"
        if not probe.exists():
            os.mkfifo(probe)
    started = time.perf_counter()
    if ctx.scenario.framing is None:
        exporting = {"OTEL_EXPORTER_OTLP_ENDPOINT": ctx.otlp_url} if receiver == CLI_OTEL_SDK else {}
        failure = await run_stdio(
            receiver_command(receiver, ctx, ["--", *requestor_command(ctx, out, probe)], probe),
            ctx,
            exporting,
        )
    else:
        failure = await run_http(
            lambda target: receiver_command(receiver, ctx, target, None), ctx, out, label
        )
    result: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    if failure:
        result["failure"] = f"{result['failure']}; {failure}" if "failure" in result else failure
    seconds = time.perf_counter() - started
    print(
        f"  {ctx.scenario.name:17} {label:20} {seconds:6.1f} s {result.get('failure', '')}", file=sys.stderr
    )
    return result


async def run_stdio(command: list[str], ctx: Context, extra_env: dict[str, str]) -> str | None:
    """Run the receiver (which starts the requestor) with ``extra_env``; the failure or None."""
    env = {**os.environ, "HOST_RECEIVER_CONFIG": str(ctx.config), **extra_env}
    with anyio.move_on_after(ctx.scenario.deadline + 30) as scope:
        finished = await anyio.run_process(
            command, env=env, cwd=ROOT, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
    if scope.cancelled_caught:
        return "killed: the run did not end in time"
    if finished.returncode != 0:
        lines = finished.stderr.decode(errors="replace").strip().splitlines() or [""]
        return f"exit status {finished.returncode}: {lines[-1][:200]}"
    return None


async def run_rounds(jobs: list[tuple[str, bool]], ctx: Context, rounds: int) -> dict[str, Any]:
    """Every job ``rounds`` times, interleaved (round k starts k jobs further on); medians.

    A shared machine drifts over seconds: interleaved rounds give every
    receiver the same mix of quiet and busy moments. The raw rounds are kept.
    """
    done: dict[str, list[dict[str, Any]]] = {}
    for k in range(rounds):
        order = jobs[k % len(jobs) :] + jobs[: k % len(jobs)]
        for label, result in (await run_jobs(order, ctx, concurrently=False)).items():
            done.setdefault(label, []).append(result)
    return medians(done)


def medians(done: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Each label's rounds merged by :func:`median_of`, the raw rounds kept under ``rounds``."""
    return {label: {**median_of(results), "rounds": results} for label, results in done.items()}


def median_of(results: list[Any]) -> Any:
    """The rounds of one measurement merged: the median (an observed value) of every number.

    Anything else is the first round's; a failure in any round stands.
    """
    first = results[0]
    if isinstance(first, bool) or not isinstance(first, int | float | dict | list):
        return first
    if isinstance(first, int | float):
        numbers = [r for r in results if isinstance(r, int | float) and not isinstance(r, bool)]
        return statistics.median_low(numbers)
    if isinstance(first, list):
        same = [r for r in results if isinstance(r, list) and len(r) == len(first)]
        return [median_of([r[i] for r in same]) for i in range(len(first))]
    merged = {key: median_of([r[key] for r in results if key in r]) for key in first}
    failures = [r["failure"] for r in results if "failure" in r]
    if failures:
        merged["failure"] = failures[0]
    return merged


async def run_jobs(jobs: list[tuple[str, bool]], ctx: Context, *, concurrently: bool) -> dict[str, Any]:
    """Run each (receiver, traced) job; side by side for the smoke run, where no timing counts."""
    runs: dict[str, Any] = {}

    async def one(receiver: str, traced: bool) -> None:
        runs[f"{receiver}+tracemalloc" if traced else receiver] = await run_one(receiver, ctx, traced=traced)

    if not concurrently:
        for receiver, traced in jobs:
            await one(receiver, traced)
        return runs
    async with anyio.create_task_group() as group:
        for receiver, traced in jobs:
            group.start_soon(one, receiver, traced)
    return runs


async def with_fake_openai(delay: float, workdir: Path) -> tuple[Path, anyio.abc.Process, str]:
    """Start tests/fake_openai.py with ``delay``; a config file naming it as provider ``fake``
    (and as ``fake-httpx``, on httpx's own HTTP pool)."""
    process = await anyio.open_process(
        [str(VENV_PYTHON), str(ROOT / "tests" / "fake_openai.py"), "--port", "0", "--delay", str(delay)],
        stderr=subprocess.DEVNULL,
    )
    assert process.stdout is not None
    with anyio.fail_after(20):
        url = await read_line(process.stdout)
    config = workdir / f"fake-{delay}.toml"
    entries = [
        f'[providers.{name}]\ntype = "openai"\nbase_url = "{url}"\napi_key_required = false\n'
        f'max_retries = 0\ntimeout = 120.0\n{extra}[[providers.{name}.models]]\nid = "fake-model"\n'
        # "fake-httpx": the same provider on httpx's own HTTP pool (the cli+httpx run)
        for name, extra in (("fake", ""), ("fake-httpx", 'http_transport = "httpx"\n'))
    ]
    config.write_text("".join(entries))
    return config, process, url


async def with_fake_vendor(vendor: str, delay: float, workdir: Path) -> tuple[Path, anyio.abc.Process, str]:
    """Start ``vendor``'s fake (tests/fake_VENDOR.py) with ``delay``; a config file naming it as
    provider ``fake-VENDOR``, an entry of that type."""
    process = await anyio.open_process(
        [str(VENV_PYTHON), "-m", f"tests.fake_{vendor}", "--port", "0", "--delay", str(delay)],
        cwd=ROOT,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdout is not None
    with anyio.fail_after(20):
        url = await read_line(process.stdout)
    config = workdir / f"fake-{vendor}-{delay}.toml"
    config.write_text(
        f'[providers.fake-{vendor}]\ntype = "{vendor}"\nbase_url = "{url}"\napi_key_required = false\n'
        f'max_retries = 0\ntimeout = 120.0\n[[providers.fake-{vendor}.models]]\nid = "fake-model"\n'
    )
    return config, process, url


#: Per wire format: the path after the base URL's own, and the body of the floor's request.
FLOOR_REQUESTS = {
    "openai": (
        "/chat/completions",
        {"model": "fake-model", "messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 16},
    ),
    "anthropic": (
        "/v1/messages",
        {"model": "fake-model", "messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 16},
    ),
    "gemini": (
        "/v1beta/models/fake-model:generateContent",
        {
            "contents": [{"role": "user", "parts": [{"text": "Say hello."}]}],
            "generationConfig": {"maxOutputTokens": 16},
        },
    ),
}


async def provider_floor(url: str, count: int, wire: str = "openai") -> dict[str, Any]:
    """Wall time of ``count`` concurrent requests sent straight to the fake provider, in ``wire``'s format.

    A bare HTTP/1.1 client (one connection per request, ``Connection: close``):
    what the provider alone costs, with no receiver in between.
    """
    parts = urlsplit(url)
    path, request = FLOOR_REQUESTS[wire]
    body = json.dumps(request).encode()
    head = (
        f"POST {parts.path}{path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    failed = 0

    async def one() -> None:
        nonlocal failed
        async with await anyio.connect_tcp(parts.hostname or "127.0.0.1", parts.port or 80) as stream:
            await stream.send(head.encode() + body)
            answer = b""
            async for chunk in stream:
                answer += chunk
        if b" 200 " not in answer[:20]:
            failed += 1

    started = time.perf_counter()
    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            for _ in range(count):
                group.start_soon(one)
    return {"results": {"wall_s": time.perf_counter() - started, "failed": failed, "requests": count}}


async def run_all(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    chosen = [s for s in scenarios(args.smoke) if not args.scenarios or s.chosen(args.scenarios)]
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="hr-bench-") as tmp, otlp_sink() as otlp_url:
        workdir = Path(tmp)
        empty = workdir / "empty.toml"
        empty.write_text("")
        for scenario in chosen:
            if scenario.name == "mrtr":
                size = "smoke" if args.smoke else "full"
                rounds = await run_mrtr(
                    args.receivers, args.mrtr_transports, size, workdir, args.rounds, concurrently=args.smoke
                )
                results["mrtr"] = medians(rounds)
                continue
            if scenario.name == "fleet":
                size = "smoke" if args.smoke else "full"
                results["fleet"] = await run_fleet(size, workdir, items=args.fleet_items)
                continue
            fake, fake_url = None, ""
            config, provider = empty, "echo"
            if scenario.delay and {"cli", "embedded"} & set(args.receivers):
                config, fake, fake_url = await with_fake_openai(scenario.delay, workdir)
                provider = "fake"
            ctx = Context(scenario, "smoke" if args.smoke else "full", workdir, config, provider, otlp_url)
            ctx.profile_dir = args.profile
            jobs = [(r, False) for r in args.receivers]
            if scenario.name == "latency" and "cli" in args.receivers:
                jobs += [(run, False) for run in (*OTEL_RUNS, CLI_SQLITE_STORE)]  # interleaved
            if scenario.traced and "embedded" in args.receivers:
                jobs.append(("embedded", True))
            try:
                if scenario.repeated and args.rounds > 1:
                    runs = await run_rounds(jobs, ctx, args.rounds)
                else:
                    runs = await run_jobs(jobs, ctx, concurrently=args.smoke)
                if scenario.name == "slow" and fake is not None:
                    if "cli" in args.receivers and "httpx" in args.backends:
                        on_httpx = replace(ctx, provider="fake-httpx")
                        runs[CLI_HTTPX] = await run_one("cli", on_httpx, label=CLI_HTTPX)
                    runs[PROVIDER_FLOOR] = await provider_floor(fake_url, SIZES[ctx.size].slow_tasks)
                    if "cli" in args.receivers:
                        runs |= await vendor_runs(ctx, [v for v in VENDORS if v in args.backends])
            finally:
                if fake is not None:
                    await stop(fake)
            results[scenario.name] = runs
    return results


async def vendor_runs(ctx: Context, vendors: Sequence[str]) -> dict[str, Any]:
    """The CLI on each of ``vendors``' backends against that vendor's fake, and that fake's floor."""
    runs: dict[str, Any] = {}
    for vendor in vendors:
        config, fake, url = await with_fake_vendor(vendor, ctx.scenario.delay, ctx.workdir)
        try:
            on_vendor = replace(ctx, config=config, provider=f"fake-{vendor}")
            runs[f"cli+{vendor}"] = await run_one("cli", on_vendor, label=f"cli+{vendor}")
            count = SIZES[ctx.size].slow_tasks
            runs[f"{PROVIDER_FLOOR}+{vendor}"] = await provider_floor(url, count, vendor)
        finally:
            await stop(fake)
    return runs


@contextmanager
def otlp_sink() -> Iterator[str]:
    """A loopback OTLP/HTTP endpoint that takes every export and answers 200; its URL.

    It decodes nothing: what a backend does with the data is not the host's cost.
    """

    class Sink(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def create_layers(smoke: bool) -> str:
    """The per-layer table of :mod:`benchmarks.create_layers`, run in a process of its own."""
    sizes = ["--number", "20", "--repeat", "2"] if smoke else []
    command = [str(VENV_PYTHON), "-m", "benchmarks.create_layers", *sizes]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return f"(failed: {done.stderr.strip().splitlines()[-1:]})"
    return done.stdout.strip()


def install_peers() -> None:
    """Make sure .peers/ holds both SDKs (idempotent; quick when already there)."""
    done = subprocess.run(["bash", str(ROOT / ".ci" / "install-peers")], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"benchmarks: installing the SDK peers failed:\n{done.stdout}{done.stderr}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a small configuration (CI)")
    parser.add_argument("--scenarios", type=lambda s: s.split(","), default=[], help="comma list")
    parser.add_argument(
        "--receivers", type=lambda s: s.split(","), default=list(RECEIVERS), help="comma list"
    )
    parser.add_argument(
        "--mrtr-transports",
        type=lambda s: s.split(","),
        default=list(MRTR_TRANSPORTS),
        help="comma list: the mrtr scenario's servers and transports (stdio, http: the mcp 2.3.0 server; "
        "ts2-sse, ts2-json: the TypeScript SDK v2 server answering SSE or JSON)",
    )
    parser.add_argument(
        "--backends",
        type=lambda s: s.split(","),
        default=list(SLOW_BACKENDS),
        help="comma list: the slow scenario's extra CLI runs (httpx: httpx's own pool; anthropic, gemini: "
        "those backends against their fakes)",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="run the CLI receiver under cProfile; its stats go to DIR/SCENARIO-cli-PROVIDER.prof "
        "(the last round's; CPU figures of such a run are the profiler's, not the receiver's)",
    )
    parser.add_argument(
        "--fleet-items",
        type=int,
        metavar="N",
        help="the fleet scenario's waiting items per host (default: 1000, or 20 with --smoke)",
    )
    parser.add_argument("--json", type=Path, help="also write the raw measurements here")
    parser.add_argument("--no-setup", action="store_true", help="do not run .ci/install-peers first")
    parser.add_argument(
        "--rounds",
        type=int,
        help="interleaved runs of the latency and scale scenarios, reported as medians "
        "(default: 3, or 1 with --smoke)",
    )
    parser.add_argument(
        "--compare",
        metavar="COMMIT",
        help="run the chosen scenarios on COMMIT and on the working tree in alternating runs and "
        "print each figure's medians, their ratio and its noise (benchmarks/compare.py)",
    )
    parser.add_argument("--compare-runs", type=int, default=5, help="runs of each side with --compare (5)")
    args = parser.parse_args(argv)
    if args.profile is not None:
        args.profile = args.profile.resolve()
        args.profile.mkdir(parents=True, exist_ok=True)
    if args.compare is not None:
        if args.compare_runs < 1:
            parser.error("--compare-runs must be at least 1")
        if args.json or args.rounds is not None or args.profile:
            parser.error("--compare runs each side once per run: it takes no --json, --rounds or --profile")
        options = [*(["--smoke"] if args.smoke else []), "--receivers", ",".join(args.receivers)]
        options += ["--mrtr-transports", ",".join(args.mrtr_transports)]
        if args.backends != list(SLOW_BACKENDS):  # older commits lack the option
            options += ["--backends", ",".join(args.backends)]
        options += ["--scenarios", ",".join(args.scenarios)] if args.scenarios else []
        print(run_compare(args.compare, args.compare_runs, options))
        return
    if args.rounds is None:
        args.rounds = 1 if args.smoke else 3
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.fleet_items is not None and args.fleet_items < 1:
        parser.error("--fleet-items must be at least 1")
    unknown = set(args.receivers) - set(RECEIVERS)
    if unknown:
        parser.error(f"unknown receivers: {', '.join(sorted(unknown))}")
    unknown = set(args.backends) - set(SLOW_BACKENDS)
    if unknown:
        parser.error(f"unknown backends: {', '.join(sorted(unknown))}")
    unknown = set(args.mrtr_transports) - set(MRTR_TRANSPORTS)
    if unknown:
        parser.error(f"unknown mrtr transports: {', '.join(sorted(unknown))}")
    if not args.no_setup and {"ts", "py"} & set(args.receivers):
        install_peers()
    started = time.perf_counter()
    print(f"benchmarks: {'smoke' if args.smoke else 'full'} run", file=sys.stderr)
    results = anyio.run(run_all, args)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    fleet = results.pop("fleet", None)  # its own lines (below), not the receivers' table
    print(render(results))
    if CLI_NO_OTEL in results.get("latency", {}):
        print(f"\n{otel_cost(results['latency'], CLI_NO_OTEL, CLI_OTEL_SDK)}")
    if CLI_SQLITE_STORE in results.get("latency", {}):
        print(f"\n{store_cost(results['latency'], CLI_SQLITE_STORE)}")
    if fleet is not None:
        print(f"\n{summary(fleet)}")
        results["fleet"] = fleet
    if "latency" in results:
        print("\nOne create taken apart (python -m benchmarks.create_layers):\n")
        print(create_layers(args.smoke))
    print(f"\n(total {time.perf_counter() - started:.0f} s)")
    failed = [
        f"{s}/{r}"
        for s, runs in results.items()
        for r, res in runs.items()
        if isinstance(res, dict) and res.get("failure")  # (a skipped fleet has text)
    ]
    if failed:
        sys.exit(f"benchmarks: runs failed: {', '.join(failed)}")
