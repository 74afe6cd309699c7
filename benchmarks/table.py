"""The figures: how each is read from the requestor's measurements, its target, the table.

A figure's value for one receiver is a number, or a :class:`Missing` that
says why there is none (a limit refused the load, a store never reached the
size). Ratios divide host-receiver's value (CLI / embedded) by the limit's
and each peer's. A target is checked for each host-receiver variant against
the values of the same run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

Run = Mapping[str, Any]
#: Runs that are not receivers: the embedded receiver with tracemalloc, and the
#: fake provider driven directly by a bare HTTP client.
TRACED = ("embedded", "embedded+tracemalloc")
PROVIDER_FLOOR = "provider-floor"
#: The CLI once more in the slow scenario, with the provider on httpx's own HTTP pool.
CLI_HTTPX = "cli+httpx"
#: The native vendor backends the slow scenario runs too, each against its own fake
#: (runs ``cli+VENDOR`` and ``provider-floor+VENDOR``).
VENDORS = ("anthropic", "gemini")
DASH = "-"
HOSTS = ("cli", "embedded")
OTHERS = ("echo", "ts", "py")
TITLES = {"cli": "CLI", "embedded": "embedded", "echo": "echo limit", "ts": "TS SDK", "py": "Py SDK"}


@dataclass(frozen=True)
class Missing:
    """No figure, and why."""

    why: str


@dataclass(frozen=True)
class Noted:
    """A figure with a caveat printed next to it."""

    value: float
    note: str


Value = float | Missing | Noted
Check = Callable[[float, Mapping[str, Value]], bool]


def number(value: Value | None) -> float | None:
    if isinstance(value, Noted):
        return value.value
    return value if isinstance(value, float) else None


@dataclass(frozen=True)
class Figure:
    """One row of the table."""

    title: str
    scenario: str
    read: Callable[[Run], Value]
    digits: int = 0
    target: str = ""
    check: Check | None = None
    ratios: bool = True
    #: (column, run): the figure exists only in that column, read from that run.
    only: tuple[str, str] | None = None
    #: Columns where the figure does not exist (a peer not run on that server).
    without: tuple[str, ...] = ()
    #: (run, reader): the figure is divided by what ``reader`` reads from that run of the scenario.
    per: tuple[str, Callable[[Run], Value]] | None = None


# --- reading the measurements ---------------------------------------------------------


def results(run: Run) -> Mapping[str, Any]:
    if "results" not in run:
        raise LookupError(run.get("failure", "no measurements"))
    found: Mapping[str, Any] = run["results"]
    return found


def phase(name: str, key: str) -> Callable[[Run], Value]:
    def read(run: Run) -> Value:
        measured = results(run).get(name)
        if not measured or key not in measured:
            return Missing("not measured")
        value = float(measured[key])
        if measured.get("errors"):
            return Noted(value, f"{measured['errors']} errors")
        if "cut_by_budget" in measured:
            return Noted(value, f"{measured['n']:,} of {measured['cut_by_budget']:,} in the time budget")
        return value

    return read


def level(index: int, key: str) -> Callable[[Run], Value]:
    def read(run: Run) -> Value:
        levels = results(run)["levels"]
        entry = levels[min(index, len(levels) - 1)] if levels else {}
        if index >= len(levels) or entry["reached"] < entry["target"]:
            why = f": {entry['stopped'].split(';')[0]}" if "stopped" in entry else ""
            return Missing(f"reached {entry.get('reached', 0):,} of {entry.get('target', 0):,} tasks{why}")
        if key not in entry:
            return Missing("one page holds every task")
        return float(entry[key]["p50_us"])

    return read


def rss_per_task_between(low: int, high: int) -> Callable[[Run], Value]:
    """Resident bytes added per task from scale level ``low`` to ``high``."""

    def read(run: Run) -> Value:
        levels = results(run)["levels"]
        if len(levels) <= high or levels[high]["reached"] < levels[high]["target"]:
            return Missing("the larger level was not reached")
        added = levels[high]["reached"] - levels[low]["reached"]
        return float(levels[high]["rss"] - levels[low]["rss"]) / float(added)

    return read


def growth(index_high: int, key: str) -> Callable[[Run], Value]:
    high, low = level(index_high, key), level(0, key)

    def read(run: Run) -> Value:
        a, b = number(high(run)), number(low(run))
        if a is None or b is None:
            missing = high(run)
            return missing if isinstance(missing, Missing) else Missing("not measured")
        return a / b

    return read


def per_task(kind: str, stage: str) -> Callable[[Run], Value]:
    """Bytes per live task (``stage='retained'``), or KiB above the baseline after wave 1 expired
    (``stage='expired'``)."""

    def read(run: Run) -> Value:
        measured = results(run)
        base: int | None
        then: int | None
        after = measured["waves"][0] if stage == "expired" else measured[stage]
        base, then = measured["baseline"].get(kind), after.get(kind)
        if base is None or then is None:
            return Missing("not measured")
        tasks = int(measured["retained_tasks"])
        if stage == "retained":
            value = float(then - base) / max(tasks, 1)
            if tasks < measured["tasks"]:
                return Noted(value, f"{tasks} of {measured['tasks']} retained")
            return value
        return float(then - base) / 1024

    return read


def wave_growth(kind: str, first: int) -> Callable[[Run], Value]:
    """KiB from after wave ``first`` (1-based) expired to after the last wave expired."""

    def read(run: Run) -> Value:
        measured = results(run)
        waves = measured["waves"]
        if len(waves) < measured["planned_waves"] or len(waves) < first:
            return Missing(f"{len(waves)} waves measured")
        before, after = waves[first - 1].get(kind), waves[-1].get(kind)
        if before is None or after is None:
            return Missing("not measured")
        value = float(after - before) / 1024
        short = [w for w in waves if w["created"] < measured["tasks"]]
        if short:
            return Noted(value, f"{len(short)} waves cut short, the first at {short[0]['created']:,} tasks")
        return value

    return read


def slow_wall(run: Run) -> Value:
    measured = results(run)
    if measured["refused"] or measured["result_errors"]:
        return Missing(f"{measured['refused']} refused, {measured['result_errors']} failed")
    return float(measured["wall_s"])


def blocked_cpu(run: Run) -> Value:
    measured = results(run)
    value = float(measured["cpu_s"])
    if measured["created"] < measured["tasks"]:
        return Noted(value, f"only {measured['created']} waiters, {measured['refused']} refused")
    return value


def floor_wall(run: Run) -> Value:
    return float(results(run)["wall_s"])


def slow_cpu_per_task(run: Run) -> Value:
    measured = results(run)
    if "cpu_s" not in measured:
        return Missing("not measured")
    return float(measured["cpu_s"]) / max(int(measured["tasks"]), 1) * 1000


def settle(run: Run) -> Value:
    measured = results(run)
    return float(measured["settle_s"])


def cancel_rate(run: Run) -> Value:
    measured = results(run)["cancel"]
    return float(measured["per_s"]) if measured["n"] else Missing("no tasks")


# --- targets ------------------------------------------------------------------------


def at_most_limit(factor: float) -> Check:
    def check(value: float, values: Mapping[str, Value]) -> bool:
        limit = number(values.get("echo"))
        return limit is not None and value <= factor * limit

    return check


def at_least_limit(factor: float) -> Check:
    def check(value: float, values: Mapping[str, Value]) -> bool:
        limit = number(values.get("echo"))
        return limit is not None and value >= factor * limit

    return check


def create_latency_check(value: float, values: Mapping[str, Value]) -> bool:
    peers = [number(values.get(p)) for p in ("ts", "py")]
    return at_most_limit(1.25)(value, values) and all(p is not None and value < p for p in peers)


def at_most(bound: float) -> Check:
    return lambda value, values: value <= bound


def below(bound: float) -> Check:
    return lambda value, values: value < bound


def above(bound: float) -> Check:
    return lambda value, values: value > bound


FIGURES = [
    Figure("CreateTaskResult p50, sequential (µs)", "latency", phase("create_seq", "p50_us"),
           target="<= 1.25x limit, < both SDKs", check=create_latency_check),
    Figure("CreateTaskResult p99, sequential (µs)", "latency", phase("create_seq", "p99_us")),
    Figure("tasks/get p50, sequential (µs)", "latency", phase("get_seq", "p50_us")),
    Figure("tasks/result p50, terminal task (µs)", "latency", phase("result_seq", "p50_us")),
    Figure("tasks/list first page p50 (µs)", "latency", phase("list_seq", "p50_us")),
    Figure("task creation, pipelined (per s)", "latency", phase("create_pipe", "per_s")),
    Figure("tasks/get, pipelined (per s)", "latency", phase("get_pipe", "per_s"),
           target=">= 0.9x limit", check=at_least_limit(0.9)),
    Figure("CreateTaskResult p50, 1k tasks (µs)", "scale", level(0, "create")),
    Figure("CreateTaskResult p50, 100k tasks (µs)", "scale", level(1, "create")),
    Figure("CreateTaskResult cost 100k / 1k", "scale", growth(1, "create"), digits=2,
           target="<= 1.2", check=at_most(1.2), ratios=False),
    Figure("tasks/get p50, 1k tasks (µs)", "scale", level(0, "get")),
    Figure("tasks/get p50, 100k tasks (µs)", "scale", level(1, "get")),
    Figure("tasks/get cost 100k / 1k", "scale", growth(1, "get"), digits=2,
           target="<= 1.2", check=at_most(1.2), ratios=False),
    Figure("tasks/list next page p50, 1k tasks (µs)", "scale", level(0, "list_next")),
    Figure("tasks/list next page p50, 100k tasks (µs)", "scale", level(1, "list_next")),
    Figure("tasks/list cost 100k / 1k", "scale", growth(1, "list_next"), digits=2,
           target="<= 1.2", check=at_most(1.2), ratios=False),
    Figure("RSS per live task, 1k to 100k live (bytes)", "scale", rss_per_task_between(0, 1),
           target="<= 2048", check=at_most(2048)),
    Figure("RSS per live task, 10,000 live (bytes)", "memory", per_task("rss", "retained"),
           target="<= 2048", check=at_most(2048)),
    Figure("RSS after wave 1 expired - baseline (KiB)", "memory", per_task("rss", "expired"),
           ratios=False),
    Figure("RSS growth from wave 2 to wave 10, all expired (KiB)", "memory", wave_growth("rss", 2),
           target="<= 1024", check=at_most(1024), ratios=False),
    Figure("traced per live task (bytes)", "memory", per_task("traced", "retained"),
           target="<= 2048", check=at_most(2048), ratios=False, only=TRACED),
    Figure("traced growth from wave 1 to wave 10, all expired (KiB)", "memory", wave_growth("traced", 1),
           target="<= 256", check=at_most(256), ratios=False, only=TRACED),
    Figure("1,000 tasks on a 1 s provider: wall (s)", "slow", slow_wall, digits=2),
    Figure("the same 1,000 requests sent straight to the provider (s)", "slow", floor_wall, digits=2,
           ratios=False, only=("echo", PROVIDER_FLOOR)),
    Figure("1,000 tasks on a 1 s provider ÷ straight to the provider", "slow", slow_wall, digits=2,
           target="<= 1.2", check=at_most(1.2), ratios=False, per=(PROVIDER_FLOOR, floor_wall)),
    Figure("receiver CPU per task, 1 s provider (ms)", "slow", slow_cpu_per_task, digits=2, ratios=False,
           target="< 1", check=below(1.0)),
    Figure("1,000 tasks, provider on httpx's own HTTP pool: wall (s)", "slow", slow_wall, digits=2,
           ratios=False, only=("cli", CLI_HTTPX)),
    Figure("httpx's own HTTP pool ÷ ours (keep ours if > 1.1)", "slow", slow_wall, digits=2,
           target="> 1.1", check=above(1.1), ratios=False, only=("cli", CLI_HTTPX), per=("cli", slow_wall)),
    *(
        figure
        for vendor in VENDORS
        for figure in (
            Figure(f"1,000 tasks on a 1 s provider, {vendor} backend: wall (s)", "slow", slow_wall,
                   digits=2, ratios=False, only=("cli", f"cli+{vendor}")),
            Figure(f"the same 1,000 requests sent straight to the {vendor} fake (s)", "slow", floor_wall,
                   digits=2, ratios=False, only=("echo", f"{PROVIDER_FLOOR}+{vendor}")),
            Figure(f"1,000 tasks, {vendor} backend ÷ straight to its fake", "slow", slow_wall, digits=2,
                   target="<= 1.2", check=at_most(1.2), ratios=False, only=("cli", f"cli+{vendor}"),
                   per=(f"{PROVIDER_FLOOR}+{vendor}", floor_wall)),
            Figure(f"receiver CPU per task, {vendor} backend (ms)", "slow", slow_cpu_per_task, digits=2,
                   target="< 1", check=below(1.0), ratios=False, only=("cli", f"cli+{vendor}")),
        )
    ),
    Figure("1,000 blocked tasks/result: CPU in 10 s (s)", "blocked", blocked_cpu, digits=2,
           target="<= 0.1", check=at_most(0.1)),
    Figure("busy after 1,000 tasks/result were sent (s)", "blocked", settle, digits=1),
    Figure("tasks/cancel of live tasks, pipelined (per s)", "blocked", cancel_rate),
]  # fmt: skip


# --- Streamable HTTP (issue 17, item 5) ------------------------------------------------

#: The HTTP scenarios run the latency figures again in each framing, the scale ones in json.
HTTP_FRAMINGS = ("json", "sse")


def http_create_latency_check(value: float, values: Mapping[str, Value]) -> bool:
    ts = number(values.get("ts"))
    return at_most_limit(1.5)(value, values) and ts is not None and value < ts


#: The targets that differ over HTTP, by the stdio figure's title; the others carry over.
HTTP_TARGETS: dict[str, tuple[str, Check]] = {
    "CreateTaskResult p50, sequential (µs)": ("<= 1.5x limit, < TS SDK", http_create_latency_check),
    "tasks/get, pipelined (per s)": (">= 0.8x limit", at_least_limit(0.8)),
}


def over_http(figure: Figure, framing: str) -> Figure:
    """``figure`` read from the HTTP run of its scenario in ``framing``, with the HTTP target."""
    target, check = HTTP_TARGETS.get(figure.title, (figure.target, figure.check))
    return replace(
        figure,
        title=f"HTTP {framing}: {figure.title}",
        scenario=f"http-{figure.scenario}-{framing}",
        target=target,
        check=check,
    )


FIGURES += [
    over_http(figure, framing)
    for framing in HTTP_FRAMINGS
    for figure in FIGURES
    if figure.scenario == "latency" or (figure.scenario == "scale" and framing == "json")
]


# --- multi-round-trip input (the mrtr scenario, benchmarks/mrtr.py) --------------------
# Columns: "embedded" is the Host API (protocol 2026-07-28 pinned), "Py SDK" the mcp 2.3.0
# Client with plain callbacks (on the mcp 2.3.0 server), "TS SDK" the TypeScript SDK v2 Client
# (on the TS SDK v2 server), "CLI" one `host-receiver run --call` process (run "cli-process",
# a sanity line).

#: Each mrtr transport: how the table names it, and the SDK client host-receiver is held to there.
MRTR_TRANSPORTS = {
    "stdio": ("stdio", "py"),
    "http": ("stateless HTTP", "py"),
    "ts2-sse": ("stateless HTTP, TS SDK v2 server answering SSE", "ts"),
    "ts2-json": ("stateless HTTP, TS SDK v2 server answering JSON", "ts"),
}
MRTR_TOOLS = {"form": "form elicitation", "sample": "sampling"}
MRTR_PEERS = {"py": "mcp 2.3.0 Client (Py SDK)", "ts": "TS SDK v2 Client (TS SDK)"}


def mrtr_value(transport: str, *path: str) -> Callable[[Run], Value]:
    """A number at ``path`` in one transport's results of an mrtr client run."""

    def read(run: Run) -> Value:
        measured: Any = results(run).get(transport)
        if measured is None:
            return Missing(run.get("failure", "not measured"))
        for key in path:
            measured = measured[key]
        return float(measured)

    return read


def at_most_peer(peer: str, factor: float) -> Check:
    def check(value: float, values: Mapping[str, Value]) -> bool:
        theirs = number(values.get(peer))
        return theirs is not None and value <= factor * theirs

    return check


def mrtr_figures() -> list[Figure]:
    """Per transport and tool: time per call (held to that server's SDK client), CPU, bursts.

    The burst target (1.2) and the protocol-auto and CLI lines are the mcp 2.3.0 server's only.
    """
    figures = []
    for transport, (over, peer) in MRTR_TRANSPORTS.items():
        on_mcp2 = peer == "py"
        ours: list[Figure] = []
        for tool, asks in MRTR_TOOLS.items():
            title = f"MRTR, one {asks} round, {over}"
            ours += [
                Figure(
                    f"{title}: time per call p50 (µs)",
                    "mrtr",
                    mrtr_value(transport, tool, "sequential", "p50_us"),
                    target=f"<= 1.0x {MRTR_PEERS[peer]}",
                    check=at_most_peer(peer, 1.0),
                ),
                Figure(
                    f"{title}: the client process's CPU per call (µs)",
                    "mrtr",
                    mrtr_value(transport, tool, "sequential", "client_cpu_us_per_call"),
                ),
                Figure(
                    f"{title}: 50 concurrent calls, wall (ms)",
                    "mrtr",
                    mrtr_value(transport, tool, "concurrent", "wall_ms"),
                    digits=1,
                ),
                Figure(
                    f"{title}: 50 concurrent wall ÷ (one call + server's own work: "
                    "its process CPU time over the 50)",
                    "mrtr",
                    mrtr_value(transport, tool, "concurrent", "ratio"),
                    digits=2,
                    target="<= 1.2" if on_mcp2 else "",
                    check=at_most(1.2) if on_mcp2 else None,
                    ratios=False,
                ),
            ]
            if on_mcp2:
                ours.append(
                    Figure(
                        f"{title}: time per call p50 with protocol auto (µs)",
                        "mrtr",
                        mrtr_value(transport, tool, "sequential", "p50_us"),
                        only=("embedded", "embedded+auto"),
                    )
                )
        if on_mcp2:
            ours.append(
                Figure(
                    f"MRTR, one form round, {over}: one `host-receiver run --call` process (ms)",
                    "mrtr",
                    mrtr_value(transport, "process_ms"),
                    ratios=False,
                    only=("cli", "cli-process"),
                )
            )
        # The other SDK's client runs on its own server only: no cell for it here.
        figures += [replace(figure, without=tuple(set(MRTR_PEERS) - {peer})) for figure in ours]
    return figures


FIGURES += mrtr_figures()


# --- rendering ------------------------------------------------------------------------


def value_of(figure: Figure, runs: Mapping[str, Run], receiver: str) -> Value | None:
    source = receiver
    if receiver in figure.without:
        return None
    if figure.only is not None:
        column, source = figure.only
        if receiver != column:
            return None
    run = runs.get(source)
    if run is None:
        return None
    try:
        value = figure.read(run)
        if figure.per is not None:
            label, read = figure.per
            value = quotient(value, read(runs[label]) if label in runs else Missing(f"no {label} run"))
        return value
    except (LookupError, TypeError, ZeroDivisionError) as exc:
        return Missing(str(exc) or type(exc).__name__)


def quotient(value: Value, by: Value) -> Value:
    """``value / by``; a Missing on either side stays, a note on the value stays with it."""
    if isinstance(value, Missing) or isinstance(by, Missing):
        return value if isinstance(value, Missing) else by
    a, b = number(value), number(by)
    assert a is not None and b is not None
    return Noted(a / b, value.note) if isinstance(value, Noted) else a / b


def cell(value: Value | None, digits: int) -> str:
    if value is None:
        return DASH
    if isinstance(value, Missing):
        return f"n/a ({value.why})"
    if isinstance(value, Noted):
        return f"{value.value:,.{digits}f} ({value.note})"
    return f"{value:,.{digits}f}"


def ratio(a: Value | None, b: Value | None) -> str:
    x, y = number(a), number(b)
    return f"{x / y:.2f}" if x is not None and y else DASH


def render(results_by_scenario: Mapping[str, Mapping[str, Run]]) -> str:
    """The table as Markdown."""
    header = ["figure", *(TITLES[r] for r in (*HOSTS, *OTHERS))]
    header += ["÷ limit (CLI / emb)", "÷ TS", "÷ Py", "target", "met (CLI / emb)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for figure in FIGURES:
        runs = results_by_scenario.get(figure.scenario)
        if runs is None:
            continue
        values = {r: value_of(figure, runs, r) for r in (*HOSTS, *OTHERS)}
        row = [figure.title, *(cell(values[r], figure.digits) for r in (*HOSTS, *OTHERS))]
        for other in OTHERS:
            if figure.ratios:
                row.append(" / ".join(ratio(values[h], values[other]) for h in HOSTS))
            else:
                row.append(DASH)
        row.append(figure.target or DASH)
        row.append(" / ".join(met(figure, values, h) for h in HOSTS) if figure.target else DASH)
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def met(figure: Figure, values: Mapping[str, Value | None], host: str) -> str:
    value = number(values[host])
    clean = isinstance(values[host], float)
    present = {k: v for k, v in values.items() if v is not None}
    verdict = None if value is None or figure.check is None else clean and figure.check(value, present)
    return DASH if verdict is None else ("yes" if verdict else "NO")


def otel_cost(runs: Mapping[str, Run], without: str, with_sdk: str) -> str:
    """What OpenTelemetry costs a CreateTaskResult (stdio, sequential, p50), as three lines."""
    read = phase("create_seq", "p50_us")
    base = read(runs[without])
    rows = [
        ("without the otel extra (API not importable)", without, ""),
        ("API installed, no SDK (the default)", "cli", "target: within noise"),
        ("SDK on, batch export over OTLP/HTTP to loopback", with_sdk, "target: <= 1.10x"),
    ]
    lines = ["OpenTelemetry cost: CreateTaskResult p50, sequential, stdio, the CLI (µs)"]
    for title, label, target in rows:
        value = read(runs[label]) if label in runs else Missing("not run")
        shown = cell(value, 0)
        share = ratio(value, base) if label != without else DASH
        lines.append(f"- {title}: {shown} ({share}){f'; {target}' if target else ''}")
    return "\n".join(lines)
