"""``host-receiver demo``: the whole flow against a bundled example server, offline.

(About 430 lines, one idea: the demo command and the transcript of what its server saw.)

It starts ``examples/demo_server.py`` (on the MCP Python SDK 1.x) over stdio
and calls its ``announce_release`` tool, which asks this host, each as a task,
for an LLM call (the announcement), a form (approve publishing) and a URL
(sign in to an example blog). The transcript on stdout tells what the host
did and what the server saw of each task.

Rules:

- The server runs on ``--python``, else ``$HOST_RECEIVER_DEMO_PYTHON``, else
  the ``python`` of the ``[demo]`` table in this environment's settings file,
  ``<sys.prefix>/host-receiver.toml`` (``bash .ci/setup`` writes it, naming
  the MCP SDK's venv it installs), else this Python (:func:`server_python`,
  which ``examples/embed_host.py`` uses too). One without ``mcp`` 1.x
  is a clear error (exit 2), checked first.
- The LLM is the configured provider, or the offline echo provider (slowed
  down by ``--llm-delay`` so that the progress shows) when none is configured.
- With a terminal, a person answers (``ask``); without one the demo approves
  every sampling request, fills forms with their defaults and declines the
  URL, so it always completes (CI runs it). ``--approve``/``--elicit`` choose.
- Exit 0 when the tool succeeded, 1 when it reported an error, 2 when the demo
  could not run.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
import tomllib
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import anyio

import host_receiver.cli._hooks as hooks
from host_receiver._identity import stdio_identity
from host_receiver.cli._fleet import add_fleet_options, end_inbox_session
from host_receiver.cli._store import STORE_ENV, store_option
from host_receiver.client.host import Host
from host_receiver.errors import ProviderError, RpcError
from host_receiver.people.approval import (
    ElicitationUI,
    FormView,
    Refuse,
    RequestDecision,
    ResultDecision,
    SamplingApprover,
    SamplingRequestView,
    SamplingResultView,
    UrlAnswer,
    UrlView,
)
from host_receiver.protocol.results import CallToolResult
from host_receiver.protocol.types import (
    CreateMessageRequestParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
)
from host_receiver.receiver import Receiver
from host_receiver.receiver.work import ElicitationHandler, SamplingHandler, WorkContext
from host_receiver.sanitize import safe_text
from host_receiver.transports.stdio import StdioTransport
from providers import EchoProvider, ProviderEntry, ProviderRegistry, build_registry, config_path, load_config

PYTHON_ENV = "HOST_RECEIVER_DEMO_PYTHON"
SERVER_NAME = "release-helper"
TOOL = "announce_release"
_PACKAGE = Path(__file__).resolve().parents[1]  # host_receiver/

Say = Callable[[str], Awaitable[None]]
_R = TypeVar("_R")
_P = TypeVar("_P", contravariant=True)
_R_co = TypeVar("_R_co", covariant=True)


def add_demo_command(commands: Any) -> None:
    demo = commands.add_parser(
        "demo",
        help="run the bundled example server through the whole task flow (works offline)",
        description="Start the bundled example MCP server and let it ask this host, as tasks, for an "
        "LLM call, a form and a URL; print a transcript of what happened.",
    )
    demo.add_argument(
        "--python",
        help=f"the Python that has mcp 1.x (default: ${PYTHON_ENV}, or the one {SETTINGS_FILE} names)",
    )
    demo.add_argument("--provider", help="the LLM provider (default: the configured ones, or offline echo)")
    demo.add_argument("--model", help="the model to use")
    demo.add_argument(
        "--llm-delay",
        type=float,
        default=1.5,
        metavar="SECONDS",
        help="how long the offline echo provider takes to answer (default: 1.5)",
    )
    demo.add_argument("--release", default="2.0.0", help="the release to announce (default: 2.0.0)")
    hooks.add_hook_options(demo, approve="auto", elicit="defaults")
    demo.add_argument(
        "--store",
        type=store_option,
        default=os.environ.get(STORE_ENV) or "memory",
        metavar="URL",
        help="with --approve web or --elicit web, a shared store (sqlite:///PATH or postgresql://...) "
        f"that keeps the inbox's items and remembered decisions (default: ${STORE_ENV}, else memory: "
        "the demo's own page; docs/fleet.md)",
    )
    add_fleet_options(demo)
    demo.set_defaults(func=demo_command)


def demo_command(args: argparse.Namespace) -> int:
    """``host-receiver demo``: check what the demo needs, then run it."""
    problem = hooks.resolve_hooks(args, approve="auto", elicit="defaults")
    if problem is not None:
        return _fail(problem)
    server = find_server_script()
    if server is None:
        return _fail("the demo server (examples/demo_server.py) is not installed with this copy")
    python = server_python(args.python)
    version = mcp_version(python)
    if version is None:
        return _fail(
            f"{python} cannot import the MCP Python SDK (mcp), which the demo server needs. Run "
            "`bash .ci/setup --demo` (it installs mcp into its own venv and names it in "
            f"{Path(sys.prefix) / SETTINGS_FILE}), or pass --python with a Python that has mcp 1.x "
            f"(or set ${PYTHON_ENV})."
        )
    if not version.startswith("1."):
        return _fail(f"{python} has mcp {version}; the demo needs mcp 1.x (2.x removed tasks)")
    return anyio.run(_demo, args, python, version, server)


def find_server_script() -> Path | None:
    """The bundled server: in the source tree, or packaged next to this module."""
    for candidate in (
        _PACKAGE.parent / "examples" / "demo_server.py",
        _PACKAGE / "_examples" / "demo_server.py",
    ):
        if candidate.is_file():
            return candidate
    return None


#: The environment's own settings (like pip's ``<venv>/pip.conf``): ``[demo] python = "..."``.
SETTINGS_FILE = "host-receiver.toml"


def server_python(explicit: str | None = None, prefix: str = sys.prefix) -> str:
    """The Python the example servers run on (the order in the module rules; ``explicit`` is ``--python``)."""
    return explicit or os.environ.get(PYTHON_ENV) or configured_python(prefix) or sys.executable


def configured_python(prefix: str = sys.prefix) -> str | None:
    """The demo server's Python named in ``<prefix>/host-receiver.toml``, if any."""
    path = Path(prefix) / SETTINGS_FILE
    try:
        settings = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        print(f"host-receiver demo: ignoring unreadable {path}: {exc}", file=sys.stderr)
        return None
    python = settings.get("demo", {}).get("python") if isinstance(settings.get("demo"), dict) else None
    return python if isinstance(python, str) and python else None


def mcp_version(python: str) -> str | None:
    """The version of ``mcp`` that ``python`` has, or None (also when it does not run)."""
    probe = "import importlib.metadata as m; print(m.version('mcp'))"
    try:
        done = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def _fail(message: str) -> int:
    print(f"host-receiver demo: {message}", file=sys.stderr)
    return hooks.EXIT_FAILURE


def demo_registry(args: argparse.Namespace) -> ProviderRegistry:
    """The configured providers, or the offline echo provider slowed down by ``--llm-delay``."""
    config = load_config(config_path())
    if args.provider in (None, "echo") and args.model is None and not config.providers:
        echo = ProviderEntry("echo", type="echo", delay=max(args.llm_delay, 0.0))
        return build_registry(config=replace(config, providers=(echo,)))
    return build_registry(provider=args.provider, model=args.model, config=config)


async def _demo(args: argparse.Namespace, python: str, version: str, server: Path) -> int:
    started = time.monotonic()
    try:
        registry = demo_registry(args)
        await registry.open()  # the models of entries that list none, from their APIs
    except ProviderError as exc:
        return _fail(str(exc))
    async with registry, AsyncExitStack() as stack:
        console = await stack.enter_async_context(hooks.open_console()) if hooks.uses_terminal(args) else None
        try:
            identity = stdio_identity([python, str(server)])
            inbox = await stack.enter_async_context(hooks.open_inbox(args, identity=identity))
        except hooks.InboxUnavailable as exc:
            return _fail(str(exc))
        say = console.say if console is not None else _print
        models = ", ".join(registry.allowed_models(SERVER_NAME)) or "none"
        await say(f"host-receiver demo: {SERVER_NAME} ({server.name}, mcp {version}) on {python}")
        await say(f"  models   {models}{' (offline)' if _offline(registry) else ''}")
        await say(f"  answers  sampling: {args.approve} · elicitation: {args.elicit}\n")
        transcript = Transcript(say, args)
        sampling, elicitation = hooks.build_hooks(
            args, registry, console, inbox=inbox, approver=transcript.approver, ui=transcript.ui
        )
        receiver = Receiver(
            sampling=transcript.sampling(sampling), elicitation=transcript.elicitation(elicitation)
        )
        host = await stack.enter_async_context(Host(receiver))
        transport = StdioTransport(python, [str(server)], name=SERVER_NAME)
        try:
            connection = await host.connect(SERVER_NAME, transport)
        except Exception as exc:
            return _fail(f"could not start the demo server: {hooks.describe_error(exc)}")
        hooks.describe_server(connection, shlex.join([python, str(server)]), inbox=inbox, console=console)
        arguments = {"version": args.release}
        await say(f"→ calling {TOOL} {json.dumps(arguments)}")
        try:
            result = await connection.call_tool(TOOL, arguments)
        except Exception as exc:
            return _fail(f"{TOOL} failed: {hooks.describe_error(exc)}")
        finally:
            await end_inbox_session(inbox)
            await connection.close()
        await say(f"← {TOOL} returned. What the server saw:")
        for line in server_report(result):
            await say(line)
        await say(f"\nDone in {time.monotonic() - started:.1f} s.")
        for line in NEXT_STEPS:
            await say(line)
        return hooks.EXIT_TOOL_ERROR if result.is_error is True else hooks.EXIT_OK


#: What the demo ends with: where to go from here.
NEXT_STEPS = (
    "\nNext steps:",
    "  1. Try your own server: see what it offers, then call a tool (its requests are served meanwhile):",
    "       host-receiver tools -- COMMAND [ARG...]          (or --url URL for an HTTP server)",
    "       host-receiver call TOOL key=value -- COMMAND [ARG...]",
    "  2. Add a real model (an OpenAI-compatible endpoint, or Anthropic), then run the demo again:",
    "       host-receiver providers add",
)


async def _print(text: str) -> None:
    print(safe_text(text, None, multiline=True), flush=True)


def _offline(registry: ProviderRegistry) -> bool:
    return all(isinstance(p, EchoProvider) for p in registry.providers)


class Transcript:
    """Says what the host does with each request, by wrapping its hooks and handlers."""

    def __init__(self, say: Say, args: argparse.Namespace) -> None:
        self.say = say
        self.approve_mode = args.approve
        self.elicit_mode = args.elicit

    async def note(self, server: str, task_id: str | None, text: str) -> None:
        task = f"task {task_id[:8]}…" if task_id else "no task"
        await self.say(f"  [host] {server} · {task}: {text}")

    def sampling(self, inner: SamplingHandler) -> SamplingHandler:
        return _TracedHandler(inner, self, _sampling_words)

    def elicitation(self, inner: ElicitationHandler) -> ElicitationHandler:
        return _TracedHandler(inner, self, _elicitation_words)

    async def _finish(self, context: WorkContext, work: Awaitable[_R]) -> _R:
        try:
            result = await work
        except RpcError as exc:
            await self.note(context.requestor_name, context.task_id, f"failed with {exc.code}: {exc.message}")
            raise
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self.note(context.requestor_name, context.task_id, "cancelled")
            raise
        await self.note(context.requestor_name, context.task_id, "completed")
        return result

    def approver(self, inner: SamplingApprover) -> SamplingApprover:
        return _TracedApprover(inner, self)

    def ui(self, inner: ElicitationUI) -> ElicitationUI:
        return _TracedUI(inner, self)


class _Accepts(Protocol[_P, _R_co]):
    def accept(self, params: _P, server: str) -> Callable[[WorkContext], Awaitable[_R_co]]: ...


class _TracedHandler(Generic[_P, _R]):
    """A handler that notes each request (in the words of ``describe``) and how its work ended."""

    def __init__(
        self, inner: _Accepts[_P, _R], transcript: Transcript, describe: Callable[[_P, str], str]
    ) -> None:
        self.inner = inner
        self.transcript = transcript
        self.describe = describe

    def accept(self, params: _P, server: str) -> Callable[[WorkContext], Awaitable[_R]]:
        work = self.inner.accept(params, server)

        async def traced(context: WorkContext) -> _R:
            how = "as a task" if context.task_id else "without a task"
            await self.transcript.note(context.requestor_name, context.task_id, self.describe(params, how))
            return await self.transcript._finish(context, work(context))

        return traced


def _sampling_words(params: CreateMessageRequestParams, how: str) -> str:
    return f"sampling/createMessage {how}, max {params.max_tokens} tokens"


def _elicitation_words(params: ElicitRequestParams, how: str) -> str:
    mode = "url" if isinstance(params, ElicitRequestURLParams) else "form"
    return f"elicitation/create ({mode}) {how}"


class _TracedApprover:
    def __init__(self, inner: SamplingApprover, transcript: Transcript) -> None:
        self.inner = inner
        self.transcript = transcript
        self._approved_at: dict[str | None, float] = {}

    async def review_request(self, view: SamplingRequestView) -> RequestDecision:
        decision = await self.inner.review_request(view)
        who = self.transcript.approve_mode
        if isinstance(decision, Refuse):
            text = f"request refused ({who}): {decision.reason}"
        else:
            model = decision.model or view.model
            text = f"request approved ({who}); generating with {model}"
            self._approved_at[view.task_id] = time.monotonic()
        await self.transcript.note(view.server, view.task_id, text)
        return decision

    async def review_result(self, view: SamplingResultView) -> ResultDecision:
        began = self._approved_at.pop(view.task_id, None)
        took = f" in {time.monotonic() - began:.1f} s" if began is not None else ""
        stop = view.result.stop_reason or "no stop reason"
        await self.transcript.note(view.server, view.task_id, f"{view.result.model} answered{took} ({stop})")
        verdict = await self.inner.review_result(view)
        who = self.transcript.approve_mode
        text = f"result refused ({who})" if isinstance(verdict, Refuse) else f"result sent ({who})"
        if not isinstance(verdict, Refuse) and verdict.result is not None:
            text += ", edited"
        await self.transcript.note(view.server, view.task_id, text)
        return verdict


class _TracedUI:
    def __init__(self, inner: ElicitationUI, transcript: Transcript) -> None:
        self.inner = inner
        self.transcript = transcript

    async def fill_form(self, view: FormView) -> ElicitResult:
        answer = await self.inner.fill_form(view)
        verb = {"accept": "accepted", "decline": "declined", "cancel": "cancelled"}[answer.action]
        text = f"form {verb} ({self.transcript.elicit_mode})"
        if answer.content:
            text += f": {view.schema.plain(answer.content)}"
        await self.transcript.note(view.server, view.task_id, text)
        return answer

    async def consent_url(self, view: UrlView) -> UrlAnswer:
        answer = await self.inner.consent_url(view)
        verb = {"accept": "opened", "decline": "declined", "cancel": "cancelled"}[answer]
        await self.transcript.note(
            view.server, view.task_id, f"link to {view.domain} {verb} ({self.transcript.elicit_mode})"
        )
        return answer


def server_report(result: CallToolResult) -> list[str]:
    """The server's JSON report as readable lines (or its raw text when it is not one)."""
    try:
        report = json.loads(result.text)
    except ValueError:
        return ["  " + result.text]
    lines = []
    for number, step in enumerate(report.get("requests", []), 1):
        mode = f" ({step['mode']})" if step.get("mode") else ""
        lines.append(f"  {number}. {step.get('method')}{mode}")
        if "task_id" in step:
            ttl = f"{step['ttl'] / 1000:g} s" if step.get("ttl") is not None else "unlimited"
            lines.append(f"     created task {step['task_id']} ({step['created_status']}, ttl {ttl})")
        for call in step.get("steps", []):
            if call["call"] == "tasks/get":
                message = f': "{call["statusMessage"]}"' if call.get("statusMessage") else ""
                lines.append(f"     tasks/get    → {call['status']}{message}")
            else:
                lines.append(f"     tasks/result → {call['outcome']} (it waited until the task ended)")
        if "result" in step:
            lines.append(f"     result: {_summary(step['result'])}")
        if "error" in step:
            lines.append(f"     error {step['error']['code']}: {step['error']['message']}")
        if step.get("completed_notification"):
            lines.append("     sent notifications/elicitation/complete")
    lines.append(f"  outcome: {report.get('outcome', '(none)')}")
    return lines


def _summary(result: dict[str, Any]) -> str:
    if "action" in result:
        content = f" {json.dumps(result['content'], ensure_ascii=False)}" if result.get("content") else ""
        return f"{result['action']}{content}"
    content = result.get("content", {})
    text = " ".join(content.get("text", "").split()) if isinstance(content, dict) else ""
    shown = text if len(text) <= 100 else text[:99] + "…"
    return f'{result.get("model")} wrote "{shown}" ({result.get("stopReason", "no stop reason")})'
