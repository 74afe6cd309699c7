"""Where the real MCP peers live, and how a test gets one (or is skipped without them).

The peers are the official Python SDK (``.peers/py``, mcp 1.30; ``.peers/py2``,
mcp 2.3.0), FastMCP with its tasks extension (``.peers/fastmcp``) and the
TypeScript SDK (``.peers/node``) acting as MCP servers; ``.ci/install-peers``
installs them (docs/peers.md, docs/peers-modern.md). The adapter tests also need
host-receiver installed with each adapter's extra into its own venv
(``.peers/adapter-mcp1``, ``-mcp2``, ``-fastmcp``, ``-fastmcp-newest``,
``-fastmcp-floor``; ``.ci/install-adapters``, docs/adapters.md). Locally, a test that needs a
missing peer is skipped with the command that installs it; when the ``CI``
environment variable is set, it fails instead, so a CI run can never pass by
skipping the interop suite.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NoReturn

import pytest

ROOT = Path(__file__).resolve().parents[2]
PEERS_DIR = Path(os.environ.get("PEERS_DIR", ROOT / ".peers"))
PEER_SCRIPTS = Path(__file__).resolve().parent / "peers"
#: How long a peer may take to print LISTENING (a loaded 2-core machine starts Python peers slowly).
START_LIMIT_S = 60
PY_SERVER = PEER_SCRIPTS / "py_server.py"
TS_SERVER = PEER_SCRIPTS / "ts_server.mjs"
RAW_SERVER = PEER_SCRIPTS / "raw_server.py"
PY2_SERVER = PEER_SCRIPTS / "py2_server.py"
FASTMCP_SERVER = PEER_SCRIPTS / "fastmcp_server.py"
#: Runs mcp 2.3.0's ``mcp.Client`` or ``fastmcp.Client`` (in that peer's own venv) against a modern peer.
SDK_CLIENT = PEER_SCRIPTS / "sdk_client.py"
#: The adapter drivers: a client library + its host-receiver adapter, run in ``.peers/adapter-*``.
ADAPTER_DRIVERS = Path(__file__).resolve().parent / "adapters"

#: Every wait a peer makes on our host is bounded by this (seconds), so a host bug
#: shows up as a ``"timeout": true`` report instead of a hung test.
PEER_WAIT_S = "20"

Sdk = Literal["python", "typescript"]
SDKS: tuple[Sdk, ...] = ("python", "typescript")


def _missing(reason: str, install: str = ".ci/install-peers (docs/peers.md)") -> NoReturn:
    message = f"{reason}; install the peers with {install}"
    if os.environ.get("CI"):
        pytest.fail(f"interop peers are required on CI: {message}", pytrace=False)
    pytest.skip(message)


def peer_python(env: Literal["py2", "fastmcp"]) -> Path:
    """The interpreter of a modern peer's venv (``.peers/py2`` or ``.peers/fastmcp``); skips without it."""
    python = PEERS_DIR / env / "bin" / "python"
    if not python.exists():
        _missing(f"the {env} peer is not installed ({python} is missing)")
    return python


#: The adapter venvs (.ci/install-adapters): one per extra, and the newest and the lowest fastmcp.
AdapterEnv = Literal["mcp1", "mcp2", "fastmcp", "fastmcp-newest", "fastmcp-floor"]


def adapter_python(env: AdapterEnv) -> Path:
    """The interpreter of an adapter's venv (``.peers/adapter-<env>``); skips without it."""
    python = PEERS_DIR / f"adapter-{env}" / "bin" / "python"
    if not python.exists():
        _missing(f"the {env} adapter venv is not installed ({python} is missing)", ".ci/install-adapters")
    return python


@dataclass(frozen=True)
class PeerCommand:
    """How to start one SDK's peer server (stdio by default; add ``--port N`` for HTTP)."""

    sdk: Sdk
    argv: tuple[str, ...]
    env: dict[str, str]

    def http_argv(self, port: int = 0) -> list[str]:
        return [*self.argv, "--port", str(port)]


def peer_command(sdk: Sdk) -> PeerCommand:
    """The command that starts ``sdk``'s peer; skips (or fails on CI) when it is not installed."""
    env = {"PEER_WAIT_S": PEER_WAIT_S}
    if sdk == "python":
        python = PEERS_DIR / "py" / "bin" / "python"
        if not python.exists():
            _missing(f"the Python SDK peer is not installed ({python} is missing)")
        return PeerCommand(sdk, (str(python), str(PY_SERVER)), env)
    node = shutil.which("node")
    if node is None:
        _missing("the TypeScript SDK peer needs node on PATH")
    sdk_dir = PEERS_DIR / "node" / "node_modules" / "@modelcontextprotocol" / "sdk"
    if not sdk_dir.is_dir():
        _missing(f"the TypeScript SDK peer is not installed ({sdk_dir} is missing)")
    return PeerCommand(sdk, (node, str(TS_SERVER)), {**env, "PEERS_NODE_DIR": str(PEERS_DIR / "node")})


def ts2_mrtr_server_command(framing: Literal["sse", "json"]) -> list[str]:
    """The MRTR benchmark's TypeScript SDK v2 server (benchmarks/peers/ts2_mrtr_server.mjs) over
    stateless HTTP answering in ``framing``; skips (or fails on CI) without the v2 SDK."""
    node = shutil.which("node")
    server = PEERS_DIR / "node" / "node_modules" / "@modelcontextprotocol" / "server"
    if node is None or not server.is_dir():
        _missing(f"the TypeScript SDK v2 server is not installed ({server})")
    return [node, str(ROOT / "benchmarks" / "peers" / "ts2_mrtr_server.mjs"), "--framing", framing]


def everything_command() -> list[str]:
    """The command that starts the reference server-everything (TS SDK, 2025-11-25) over stdio."""
    script = (
        PEERS_DIR
        / "node"
        / "node_modules"
        / "@modelcontextprotocol"
        / "server-everything"
        / "dist"
        / "index.js"
    )
    node = shutil.which("node")
    if node is None or not script.exists():
        _missing(f"server-everything is not installed ({script})")
    return [node, str(script), "stdio"]


@contextmanager
def http_server(argv: list[str], env: dict[str, str] | None = None) -> Iterator[str]:
    """Start ``argv`` (a peer that takes ``--port 0`` and prints ``LISTENING <url>``); yield its URL."""
    with tempfile.TemporaryFile() as errors:  # kept to say why a peer did not start
        process = subprocess.Popen(
            [*argv, "--port", "0"] if "--port" not in argv else argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            env={**os.environ, **(env or {})},
        )
        assert process.stdout is not None
        watchdog = threading.Timer(START_LIMIT_S, process.kill)  # a peer that never starts fails, not hangs
        watchdog.start()
        try:
            line = process.stdout.readline()
        finally:
            watchdog.cancel()
        try:
            if not line.startswith("LISTENING "):
                errors.seek(0)
                said = errors.read()[-2000:].decode(errors="replace")
                raise RuntimeError(
                    f"{argv[1] if len(argv) > 1 else argv[0]} did not start within {START_LIMIT_S} s "
                    f"(it printed {line!r}; its stderr ends {said!r})"
                )
            yield line.split()[1]
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            process.stdout.close()


class HttpPeer:
    """One peer serving Streamable HTTP on 127.0.0.1 in its own process."""

    def __init__(self, command: PeerCommand) -> None:
        self.sdk = command.sdk
        self.process = subprocess.Popen(
            command.http_argv(0),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            env={**os.environ, **command.env},
            text=True,
        )
        assert self.process.stdout is not None
        watchdog = threading.Timer(30, self.process.kill)  # a peer that never starts fails, not hangs
        watchdog.start()
        try:
            line = self.process.stdout.readline()  # "LISTENING <url>" once the socket accepts
        finally:
            watchdog.cancel()
        if not line.startswith("LISTENING "):
            self.stop()
            raise RuntimeError(f"the {self.sdk} HTTP peer did not start (it printed {line!r})")
        self.url = line.split()[1]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
