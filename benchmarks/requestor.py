"""The load-generating requestor: an MCP server on stdio, raw JSON-RPC, no MCP library.

The receiver under test starts this script as its stdio server, so the
receiver is this process's parent: resident memory and CPU time are read from
``/proc/<ppid>``. The script answers ``initialize``, waits for
``notifications/initialized``, runs one scenario, writes its measurements as
JSON to ``--out``, sends ``notifications/message`` with ``"benchmark done"``
(the cue for receivers that do not notice a closed pipe) and exits.
:mod:`benchmarks.http_requestor` runs the same scenarios over Streamable HTTP.

Rules:
- Sequential phases read their own answers with a blocking read: no helper
  task and no event-loop wake-up on the timed path. Optional pauses go between
  requests, never inside a timed round trip.
- Pipelined phases run one writer and one reader task; the writer keeps at
  most ``window`` requests unanswered and writes every request it may send in
  one ``write``; the reader routes answers by id.
- Notifications and requests from the receiver are read and counted; requests
  get -32601.
- A phase that is refused records the first error and stops; nothing retries.
- Everything is bounded: counts by the size table, each phase by its time
  budget, the whole run by ``--deadline``.

Scenarios (sizes in :data:`SIZES`): ``latency``, ``scale``, ``memory``,
``slow``, ``blocked``; each is a function below with its own docstring.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import signal
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import anyio

Message = dict[str, Any]
Results = dict[str, Any]

DONE_TEXT = "benchmark done"
PROMPT = [{"role": "user", "content": {"type": "text", "text": "Say hello."}}]
LONG_TTL_MS = 600_000
#: Between sequential creates, so that each task's background work (instant in
#: every receiver measured) is over before the next request is timed.
CREATE_PAUSE_S = 0.002
#: ttl of the memory scenario's warm-up tasks, gone before the baseline is taken.
WARM_TTL_MS = 700


@dataclass(frozen=True)
class Sizes:
    """How much each scenario does."""

    warmup: int
    sequential: int
    list_calls: int
    pipelined_creates: int
    pipelined_gets: int
    window: int
    scale_levels: tuple[int, ...]
    scale_samples: int
    fill_budget_s: float
    fill_min_rate: float
    phase_budget_s: float
    memory_tasks: int
    memory_ttl_ms: int
    memory_waves: int
    wave_ttl_ms: int
    wave_fill_budget_s: float
    slow_tasks: int
    blocked_tasks: int
    blocked_window_s: float
    settle_limit_s: float


SIZES = {
    "full": Sizes(
        warmup=300,
        sequential=2000,
        list_calls=300,
        pipelined_creates=5000,
        pipelined_gets=60000,
        window=32,
        scale_levels=(1000, 100_000),
        scale_samples=3000,
        fill_budget_s=90.0,
        fill_min_rate=400.0,
        phase_budget_s=15.0,
        memory_tasks=10_000,
        memory_ttl_ms=15_000,
        memory_waves=10,
        wave_ttl_ms=2_000,
        wave_fill_budget_s=20.0,
        slow_tasks=1000,
        blocked_tasks=1000,
        blocked_window_s=10.0,
        settle_limit_s=12.0,
    ),
    "smoke": Sizes(
        warmup=20,
        sequential=100,
        list_calls=20,
        pipelined_creates=200,
        pipelined_gets=500,
        window=32,
        scale_levels=(100, 1000),
        scale_samples=50,
        fill_budget_s=10.0,
        fill_min_rate=50.0,
        phase_budget_s=5.0,
        memory_tasks=300,
        memory_ttl_ms=1500,
        memory_waves=3,
        wave_ttl_ms=500,
        wave_fill_budget_s=2.0,
        slow_tasks=50,
        blocked_tasks=50,
        blocked_window_s=0.5,
        settle_limit_s=1.0,
    ),
}


class ReceiverGone(Exception):
    """The receiver closed the pipe."""


# --- the pipe ------------------------------------------------------------------------


class Wire:
    """JSON lines on stdin/stdout, made non-blocking and awaited with anyio."""

    def __init__(self, rfd: int = 0, wfd: int = 1) -> None:
        self.rfd, self.wfd = rfd, wfd
        os.set_blocking(rfd, False)
        os.set_blocking(wfd, False)
        self._lines: deque[bytes] = deque()
        self._partial = b""

    async def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.wfd, view) :]
            except BlockingIOError:
                await anyio.wait_writable(self.wfd)

    async def receive(self) -> Message:
        while not self._lines:
            await self._fill()
        return self.take()

    async def receive_sequential(self) -> Message:
        """The next message on the timed sequential path (here: :meth:`receive_blocking`)."""
        return self.receive_blocking()

    def receive_blocking(self) -> Message:
        """The next message, blocking the whole process until it comes.

        Only for the timed sequential path, where nothing else may run anyway:
        it saves the event loop's wake-up from every measured round trip.
        """
        if not self._lines:
            os.set_blocking(self.rfd, True)
            try:
                while not self._lines:
                    self._split(os.read(self.rfd, 1 << 20))
            finally:
                os.set_blocking(self.rfd, False)
        return self.take()

    def read_available(self) -> bool:
        """Read what the pipe holds now, without waiting; whether a whole message is ready."""
        if not self._lines:
            with contextlib.suppress(BlockingIOError):
                self._split(os.read(self.rfd, 1 << 20))
        return bool(self._lines)

    def take(self) -> Message:
        """The next whole message already read."""
        message: Message = json.loads(self._lines.popleft())
        return message

    async def _fill(self) -> None:
        try:
            chunk = os.read(self.rfd, 1 << 20)
        except BlockingIOError:
            await anyio.wait_readable(self.rfd)
            return
        self._split(chunk)

    def _split(self, chunk: bytes) -> None:
        if not chunk:
            raise ReceiverGone("the receiver closed the pipe")
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        self._lines.extend(line for line in lines if line.strip())


def encode(request_id: int | None, method: str, params: Message | None) -> bytes:
    message: Message = {"jsonrpc": "2.0"}
    if request_id is not None:
        message["id"] = request_id
    message["method"] = method
    if params is not None:
        message["params"] = params
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def create_params(ttl_ms: int) -> Message:
    return {"messages": PROMPT, "maxTokens": 16, "task": {"ttl": ttl_ms}}


# --- the receiver process ------------------------------------------------------------


def rss_bytes(pid: int) -> int:
    """Resident set size of ``pid`` (VmRSS)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of ``pid``."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cmdline(pid: int) -> str:
    with open(f"/proc/{pid}/cmdline", "rb") as raw:
        return raw.read().replace(b"\0", b" ").decode(errors="replace").strip()


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def latency_summary(values_ns: Sequence[int], errors: int, first_error: Any) -> Results:
    values = [v / 1000 for v in values_ns]
    out: Results = {"n": len(values), "errors": errors}
    if values:
        out |= {"p50_us": percentile(values, 0.5), "p99_us": percentile(values, 0.99)}
    if first_error is not None:
        out["first_error"] = first_error
    return out


# --- the protocol --------------------------------------------------------------------


class Batch:
    """Requests in flight in one pipelined phase; answers kept by id."""

    def __init__(self, size: int, window: int | None) -> None:
        self.answers: dict[int, Message] = {}
        self.remaining = size
        self.done = anyio.Event()
        self.credits = anyio.Semaphore(window) if window else None
        if size == 0:
            self.done.set()

    def answer(self, request_id: int, message: Message) -> None:
        self.answers[request_id] = message
        if self.credits is not None:
            self.credits.release()
        self.remaining -= 1
        if self.remaining == 0:
            self.done.set()


class MessageWire(Protocol):
    """What a requestor needs of its connection: :class:`Wire` here, an HTTP one elsewhere."""

    async def send(self, data: bytes) -> None:
        """Send JSON lines (one message per line), in one write where the medium allows."""

    async def receive(self) -> Message:
        """The next message from the receiver."""

    async def receive_sequential(self) -> Message:
        """The next message, on the timed sequential path (the cheapest wait the wire has)."""

    def read_available(self) -> bool:
        """Whether a whole message has already arrived (read without waiting)."""

    def take(self) -> Message:
        """The next message that has already arrived."""


class Requestor:
    """The server side of the connection: handshake, then calls and batches."""

    def __init__(self, wire: MessageWire, receiver_pid: int) -> None:
        self.wire = wire
        self.receiver_pid = receiver_pid
        self.notifications: dict[str, int] = {}
        self.client_capabilities: Message = {}
        self._ids = 0
        self._owners: dict[int, Batch] = {}

    def next_id(self) -> int:
        self._ids += 1
        return self._ids

    async def handshake(self) -> None:
        while True:
            message = await self.wire.receive()
            if message.get("method") == "initialize":
                self.client_capabilities = message.get("params", {}).get("capabilities", {})
                result = {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"logging": {}},
                    "serverInfo": {"name": "bench-requestor", "version": "1"},
                }
                reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
                await self.wire.send(json.dumps(reply).encode() + b"\n")
            elif message.get("method") == "notifications/initialized":
                return
            else:
                await self._other(message)

    async def _other(self, message: Message) -> None:
        method = message.get("method")
        if method is None:
            return  # a late answer nobody waits for
        if "id" in message:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": error}
            await self.wire.send(json.dumps(reply).encode() + b"\n")
        else:
            self.notifications[method] = self.notifications.get(method, 0) + 1

    async def call(self, method: str, params: Message | None = None) -> tuple[int, Message]:
        """One request, answered before anything else is sent: (latency ns, answer).

        What the receiver sent before (status notifications of earlier tasks)
        is read and handled first, so that the timed round trip holds only the
        request and its answer.
        """
        while self.wire.read_available():
            await self._other(self.wire.take())
        request_id = self.next_id()
        data = encode(request_id, method, params)
        start = time.perf_counter_ns()
        await self.wire.send(data)
        while True:
            message = await self.wire.receive_sequential()
            if message.get("id") == request_id and "method" not in message:
                return time.perf_counter_ns() - start, message
            await self._other(message)

    async def drain(self, quiet_s: float = 0.3) -> None:
        """Read whatever the receiver sends until it is quiet for ``quiet_s``."""
        while True:
            with anyio.move_on_after(quiet_s) as scope:
                await self._other(await self.wire.receive())
            if scope.cancelled_caught:
                return

    async def pipeline(
        self, requests: Sequence[tuple[str, Message | None]], window: int | None
    ) -> tuple[float, list[Message]]:
        """Send ``requests`` with at most ``window`` unanswered; (seconds, answers in order)."""
        batch = Batch(len(requests), window)
        ids = [self.next_id() for _ in requests]
        start = time.perf_counter()
        async with anyio.create_task_group() as group:
            group.start_soon(self.read_until, batch.done)
            await self.write_batch(batch, ids, requests)
            await batch.done.wait()
            group.cancel_scope.cancel()
        elapsed = time.perf_counter() - start
        return elapsed, [batch.answers[i] for i in ids]

    async def write_batch(self, batch: Batch, ids: list[int], requests: Sequence[tuple[str, Any]]) -> None:
        """Send ``requests`` under ``ids``, as many per write as the batch's window allows."""
        position = 0
        while position < len(ids):
            allowed = len(ids) - position
            if batch.credits is not None:
                await batch.credits.acquire()
                allowed = 1
                while allowed < len(ids) - position:
                    try:
                        batch.credits.acquire_nowait()
                    except anyio.WouldBlock:
                        break
                    allowed += 1
            chunk = []
            for request_id, (method, params) in zip(
                ids[position : position + allowed], requests[position : position + allowed], strict=True
            ):
                self._owners[request_id] = batch
                chunk.append(encode(request_id, method, params))
            position += allowed
            await self.wire.send(b"".join(chunk))

    async def read_until(self, done: anyio.Event) -> None:
        """Route answers to their batches (and handle the rest) until ``done`` is set."""
        while not done.is_set():
            message = await self.wire.receive()
            request_id = message.get("id")
            owner = None
            if "method" not in message and isinstance(request_id, int):
                owner = self._owners.pop(request_id, None)
            if owner is not None:
                assert isinstance(request_id, int)
                owner.answer(request_id, message)
            else:
                await self._other(message)

    async def finish(self) -> None:
        params = {"level": "info", "logger": "bench", "data": DONE_TEXT}
        await self.wire.send(encode(None, "notifications/message", params))


def errors_of(answers: Sequence[Message]) -> tuple[int, Any]:
    failed = [a["error"] for a in answers if "error" in a]
    return len(failed), (failed[0] if failed else None)


def task_ids(answers: Sequence[Message]) -> list[str]:
    return [a["result"]["task"]["taskId"] for a in answers if "result" in a and "task" in a["result"]]


async def sequential(
    requestor: Requestor,
    count: int,
    make: Callable[[int], tuple[str, Message | None]],
    *,
    pause: float = 0.0,
    budget_s: float = math.inf,
) -> tuple[Results, list[Message]]:
    """Up to ``count`` requests one after the other, ``pause`` seconds apart, for at most ``budget_s``."""
    latencies, answers = [], []
    deadline = time.perf_counter() + budget_s
    for i in range(count):
        if time.perf_counter() > deadline:
            break
        if pause:
            await anyio.sleep(pause)
        elapsed, answer = await requestor.call(*make(i))
        latencies.append(elapsed)
        answers.append(answer)
    errors, first = errors_of(answers)
    summary = latency_summary(latencies, errors, first)
    if len(answers) < count:
        summary["cut_by_budget"] = count
    return summary, answers


async def pipelined(
    requestor: Requestor,
    requests: Sequence[tuple[str, Message | None]],
    window: int,
    *,
    budget_s: float = math.inf,
    chunk: int = 2000,
) -> tuple[Results, list[Message]]:
    """``requests`` pipelined in chunks until done or ``budget_s`` is spent; the rate reached."""
    answers: list[Message] = []
    seconds = 0.0
    for start in range(0, len(requests), chunk):
        if seconds > budget_s:
            break
        spent, more = await requestor.pipeline(requests[start : start + chunk], window)
        seconds += spent
        answers.extend(more)
    errors, first = errors_of(answers)
    out: Results = {"n": len(answers), "seconds": seconds, "per_s": len(answers) / seconds, "errors": errors}
    if len(answers) < len(requests):
        out["cut_by_budget"] = len(requests)
    if first is not None:
        out["first_error"] = first
    return out, answers


def throughput(count: int, seconds: float, answers: Sequence[Message]) -> Results:
    errors, first = errors_of(answers)
    out: Results = {"n": count, "seconds": seconds, "per_s": count / seconds, "errors": errors}
    if first is not None:
        out["first_error"] = first
    return out


# --- scenarios -----------------------------------------------------------------------


def creates(count: int, ttl_ms: int = LONG_TTL_MS) -> list[tuple[str, Message | None]]:
    return [("sampling/createMessage", create_params(ttl_ms))] * count


async def latency(req: Requestor, size: Sizes, args: argparse.Namespace) -> Results:
    """Sequential create/get/result/list latency, then pipelined create and get throughput."""
    out: Results = {}
    budget = size.phase_budget_s
    await sequential(req, size.warmup, lambda i: creates(1)[0], budget_s=budget)
    await req.drain()
    out["create_seq"], answers = await sequential(
        req, size.sequential, lambda i: creates(1)[0], pause=CREATE_PAUSE_S, budget_s=budget
    )
    ids = task_ids(answers)
    if not ids:
        return out
    await req.drain()
    out["get_seq"], _ = await sequential(
        req, size.sequential, lambda i: ("tasks/get", {"taskId": ids[i % len(ids)]}), budget_s=budget
    )
    out["result_seq"], _ = await sequential(
        req, size.list_calls, lambda i: ("tasks/result", {"taskId": ids[i % len(ids)]}), budget_s=budget
    )
    out["list_seq"], _ = await sequential(
        req, size.list_calls, lambda i: ("tasks/list", None), budget_s=budget
    )
    out["create_pipe"], _ = await pipelined(
        req, creates(size.pipelined_creates), size.window, budget_s=budget
    )
    await req.drain()
    gets = [("tasks/get", {"taskId": ids[i % len(ids)]}) for i in range(size.pipelined_gets)]
    out["get_pipe"], _ = await pipelined(req, gets, size.window, budget_s=budget)
    return out


async def fill(
    req: Requestor, count: int, ttl_ms: int, budget_s: float, min_rate: float = 0.0
) -> tuple[list[str], str | None]:
    """Create up to ``count`` tasks, pipelined in chunks; (ids, why it stopped early or None).

    Stops at the first refusal, when ``budget_s`` is spent, or when a chunk
    went slower than ``min_rate`` tasks per second (a store that slows down as
    it grows would never get there).
    """
    ids: list[str] = []
    started = time.perf_counter()
    while len(ids) < count:
        if time.perf_counter() - started > budget_s:
            return ids, f"time budget of {budget_s:.0f} s spent"
        size = min(2000, count - len(ids))
        seconds, answers = await req.pipeline(creates(size, ttl_ms), 64)
        ids.extend(task_ids(answers))
        errors, first = errors_of(answers)
        if errors:
            return ids, f"refused: {first.get('message') if isinstance(first, dict) else first}"
        if len(ids) < count and size / seconds < min_rate:
            return ids, f"slowed to {size / seconds:.0f} creates/s"
    return ids, None


async def page_costs(req: Requestor, ids: list[str], samples: int) -> Results:
    """p50 of ``tasks/get``, ``tasks/list`` pages and creates among ``ids`` (creates last: they add tasks)."""
    rng = random.Random(7)
    out: Results = {}
    out["get"], _ = await sequential(req, samples, lambda i: ("tasks/get", {"taskId": rng.choice(ids)}))
    out["list_first"], answers = await sequential(req, samples // 4 or 1, lambda i: ("tasks/list", None))
    page = answers[-1].get("result", {}) if answers else {}
    cursor = page.get("nextCursor")
    if cursor is not None:
        out["list_next"], _ = await sequential(
            req, samples // 4 or 1, lambda i: ("tasks/list", {"cursor": cursor})
        )
    out["page_size"] = len(page.get("tasks", []))
    out["create"], created = await sequential(
        req, samples // 3 or 1, lambda i: creates(1)[0], pause=CREATE_PAUSE_S
    )
    ids.extend(task_ids(created))
    return out


async def scale(req: Requestor, size: Sizes, args: argparse.Namespace) -> Results:
    """``tasks/get`` and ``tasks/list`` page cost with each level of live tasks."""
    out: Results = {"levels": []}
    ids: list[str] = []
    for level in size.scale_levels:
        started = time.perf_counter()
        more, stopped = await fill(req, level - len(ids), LONG_TTL_MS, size.fill_budget_s, size.fill_min_rate)
        ids.extend(more)
        entry: Results = {"target": level, "reached": len(ids), "fill_s": time.perf_counter() - started}
        if stopped is not None:
            entry["stopped"] = stopped
        if ids:
            await req.call("tasks/result", {"taskId": ids[-1]})
        await req.drain()
        entry["rss"] = rss_bytes(req.receiver_pid)
        if ids:
            entry |= await page_costs(req, ids, size.scale_samples)
        out["levels"].append(entry)
        if len(ids) < level:
            break
    return out


async def probe(args: argparse.Namespace, receiver_pid: int) -> Results | None:
    """Ask an embedded receiver for its tracemalloc figures (SIGUSR1, answer on a FIFO)."""
    if not args.probe_fifo:
        return None

    def read() -> bytes:
        with open(args.probe_fifo, "rb") as fifo:
            return fifo.read()

    os.kill(receiver_pid, signal.SIGUSR1)
    with anyio.fail_after(30):
        data = await anyio.to_thread.run_sync(read)
    answer: Results = json.loads(data)
    return answer


async def snapshot(req: Requestor, args: argparse.Namespace) -> Results:
    out: Results = {"rss": rss_bytes(req.receiver_pid)}
    traced = await probe(args, req.receiver_pid)
    if traced is not None:
        out["traced"] = traced["traced"]
    return out


async def expire(req: Requestor, ids: Sequence[str], until: float) -> Message | None:
    """Wait until ``until`` (monotonic), then confirm that the last task is gone.

    The ``tasks/get`` of the last id (-32602 once it expired) and a
    ``tasks/list`` let stores that expire lazily clean up; the answer to the
    get is returned.
    """
    await anyio.sleep(max(0.0, until - time.monotonic()))
    answer = None
    if ids:
        _, answer = await req.call("tasks/get", {"taskId": ids[-1]})
    await req.call("tasks/list")
    await req.drain(1.0)
    return answer


async def memory(req: Requestor, size: Sizes, args: argparse.Namespace) -> Results:
    """Memory with ``memory_tasks`` live tasks, then after each of ``memory_waves`` waves expired.

    Wave 1 is created with a ttl long enough to outlive its creation and is
    measured while every task lives (bytes per live task); the later waves use
    a ttl of twice wave 1's creation time plus a second, so that each of them
    too is all alive at its peak. After each wave's last task expired, resident memory (and,
    in the traced variant, tracemalloc's live bytes) is recorded: does a wave
    leave anything behind for the next?
    """
    out: Results = {
        "tasks": size.memory_tasks,
        "ttl_ms": size.memory_ttl_ms,
        "planned_waves": size.memory_waves,
    }
    out["waves"] = []
    warm, _ = await fill(req, size.warmup, WARM_TTL_MS, size.fill_budget_s)
    await expire(req, warm, time.monotonic() + WARM_TTL_MS / 1000 + 0.5)
    out["baseline"] = await snapshot(req, args)
    ttl_ms = size.memory_ttl_ms
    for wave in range(size.memory_waves):
        started = time.monotonic()
        ids, stopped = await fill(req, size.memory_tasks, ttl_ms, size.wave_fill_budget_s)
        filled = time.monotonic()
        entry: Results = {"ttl_ms": ttl_ms, "created": len(ids), "fill_s": filled - started}
        if stopped is not None:
            entry["stopped"] = stopped
        if wave == 0:
            out["fill_s"], out["retained_tasks"] = entry["fill_s"], len(ids)
            # Every later wave lives until it is complete too: twice the first fill, plus a second.
            ttl_ms = max(size.wave_ttl_ms, round(2000 * entry["fill_s"]) + 1000)
            if stopped is not None:
                out["stopped"] = stopped
            if ids:
                await req.call("tasks/result", {"taskId": ids[-1]})
            await req.drain()
            out["retained"] = await snapshot(req, args)
        gone = await expire(req, ids, filled + ttl_ms / 1000 + 1.5)
        entry["expired_error"] = gone.get("error") if gone else None
        entry |= await snapshot(req, args)
        out["waves"].append(entry)
    return out


async def slow(req: Requestor, size: Sizes, args: argparse.Namespace) -> Results:
    """``slow_tasks`` tasks on a slow provider: wall time from the first create to the last result.

    Also the receiver's CPU over that time (``cpu_s``).
    """
    cpu_before, started = cpu_seconds(req.receiver_pid), time.perf_counter()
    created_s, answers = await req.pipeline(creates(size.slow_tasks), 256)
    ids = task_ids(answers)
    refused, first = errors_of(answers)
    _, results = await req.pipeline([("tasks/result", {"taskId": t}) for t in ids], None)
    wall = time.perf_counter() - started
    cpu = cpu_seconds(req.receiver_pid) - cpu_before
    failed, first_failure = errors_of(results)
    out: Results = {"tasks": size.slow_tasks, "created": len(ids), "create_s": created_s, "wall_s": wall}
    out["cpu_s"] = cpu
    out |= {"refused": refused, "result_errors": failed}
    if first is not None:
        out["first_refusal"] = first
    if first_failure is not None:
        out["first_result_error"] = first_failure
    return out


async def until_quiet(pid: int, limit_s: float, interval: float = 0.5, idle_cpu: float = 0.02) -> float:
    """Seconds until ``pid`` used at most ``idle_cpu`` CPU seconds in an ``interval`` (capped)."""
    started = time.perf_counter()
    before = cpu_seconds(pid)
    while time.perf_counter() - started < limit_s:
        await anyio.sleep(interval)
        now = cpu_seconds(pid)
        if now - before <= idle_cpu:
            break
        before = now
    return time.perf_counter() - started


async def blocked(req: Requestor, size: Sizes, args: argparse.Namespace) -> Results:
    """CPU time of the receiver while ``blocked_tasks`` ``tasks/result`` calls wait.

    The window opens once the receiver has gone quiet after the requests (the
    time that took is reported as ``settle_s``: starting the provider calls).
    Then every task is cancelled, which also ends the waits.
    """
    _, answers = await req.pipeline(creates(size.blocked_tasks), 256)
    ids = task_ids(answers)
    refused, first = errors_of(answers)
    out: Results = {"tasks": size.blocked_tasks, "created": len(ids), "refused": refused}
    if first is not None:
        out["first_refusal"] = first
    results = Batch(len(ids), None)
    cancels = Batch(len(ids), 64)
    async with anyio.create_task_group() as group:
        done = anyio.Event()
        group.start_soon(req.read_until, done)
        sent = time.perf_counter()
        await req.write_batch(
            results, [req.next_id() for _ in ids], [("tasks/result", {"taskId": t}) for t in ids]
        )
        out["settle_s"] = (
            await until_quiet(req.receiver_pid, size.settle_limit_s) + time.perf_counter() - sent
        )
        cpu_before, wall_before = cpu_seconds(req.receiver_pid), time.perf_counter()
        await anyio.sleep(size.blocked_window_s)
        cpu_after, wall_after = cpu_seconds(req.receiver_pid), time.perf_counter()
        out |= {"window_s": wall_after - wall_before, "cpu_s": cpu_after - cpu_before}
        out["answered_before_cancel"] = len(results.answers)
        started = time.perf_counter()
        await req.write_batch(
            cancels, [req.next_id() for _ in ids], [("tasks/cancel", {"taskId": t}) for t in ids]
        )
        await cancels.done.wait()
        seconds = time.perf_counter() - started
        out["cancel"] = throughput(len(ids), seconds, list(cancels.answers.values()))
        with anyio.move_on_after(15):
            await results.done.wait()
        out["results_after_cancel"] = len(results.answers)
        done.set()
        group.cancel_scope.cancel()
    return out


SCENARIOS: dict[str, Callable[[Requestor, Sizes, argparse.Namespace], Awaitable[Results]]] = {
    "latency": latency,
    "scale": scale,
    "memory": memory,
    "slow": slow,
    "blocked": blocked,
}


# --- main ----------------------------------------------------------------------------


async def run(args: argparse.Namespace) -> Results:
    return await measure(Requestor(Wire(), os.getppid()), args)


async def measure(requestor: Requestor, args: argparse.Namespace, sizes: dict[str, Sizes] = SIZES) -> Results:
    """Handshake, ``args.scenario`` (at ``sizes[args.size]``) and the closing notice; the measurements."""
    out: Results = {"scenario": args.scenario, "size": args.size, "receiver_pid": requestor.receiver_pid}
    out["receiver_cmdline"] = cmdline(requestor.receiver_pid)
    try:
        with anyio.fail_after(args.deadline):
            await requestor.handshake()
            out["client_capabilities"] = requestor.client_capabilities
            out["rss_after_handshake"] = rss_bytes(requestor.receiver_pid)
            out["results"] = await SCENARIOS[args.scenario](requestor, sizes[args.size], args)
            out["notifications"] = requestor.notifications
            await requestor.finish()
    except (ReceiverGone, TimeoutError, OSError) as exc:
        out["failure"] = f"{type(exc).__name__}: {exc}"
    return out


def options(description: str, scenarios: Sequence[str]) -> argparse.ArgumentParser:
    """The command line every requestor takes (scenario, size, output, deadline)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--scenario", choices=scenarios, required=True)
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    parser.add_argument("--out", required=True, help="where to write the JSON measurements")
    parser.add_argument("--deadline", type=float, default=300.0, help="give up after this many seconds")
    return parser


def save(results: Results, path: str) -> None:
    with open(path, "w", encoding="utf-8") as out:
        json.dump(results, out, indent=1)


def main(argv: Sequence[str] | None = None) -> None:
    parser = options(__doc__.splitlines()[0], sorted(SCENARIOS))
    parser.add_argument("--probe-fifo", help="FIFO on which an embedded receiver reports tracemalloc")
    args = parser.parse_args(argv)
    save(anyio.run(run, args), args.out)


if __name__ == "__main__":
    main()
