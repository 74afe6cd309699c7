"""The command's OpenTelemetry SDK: configured from the OTEL_* environment only, flushed at exit.

The command runs as a user runs it (a subprocess) against the mcp 1.30 peer,
exporting over OTLP/HTTP to the loopback receiver (tests/otlp_receiver.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_command import interrupted, run_cli
from tests.interop import peer_command
from tests.otlp_receiver import OtlpReceiver

pytestmark = pytest.mark.slow


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """No user configuration, bounded peer waits, and no OTEL_* variable of this process."""
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
        "HOST_RECEIVER_CONFIG": str(tmp_path / "absent-config.toml"),
        "PEER_WAIT_S": "20",
    }


def call_sample_task(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = peer_command("python")
    args = ["run", "--approve", "auto", "--call", "sample_task", "--args", '{"prompt": "hello"}']
    proc = run_cli(env, *args, "--", *command.argv)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_an_otlp_endpoint_turns_export_on(env: dict[str, str]) -> None:
    with OtlpReceiver() as otlp:
        call_sample_task({**env, "OTEL_EXPORTER_OTLP_ENDPOINT": otlp.url})
    names = {span.name for span in otlp.spans}
    assert {"tools/call sample_task", "sampling/createMessage", "task sampling/createMessage"} <= names
    assert {span.service for span in otlp.spans} == {"host-receiver"}
    assert {"mcp.client.operation.duration", "host_receiver.receiver.tasks.finished"} <= otlp.metrics.keys()


def test_the_service_is_named_by_the_environment(env: dict[str, str]) -> None:
    with OtlpReceiver() as otlp:
        call_sample_task(
            {
                **env,
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{otlp.url}/v1/traces",
                "OTEL_SERVICE_NAME": "my-host",
            }
        )
    assert otlp.spans and {span.service for span in otlp.spans} == {"my-host"}
    assert otlp.metrics == {}  # only traces were asked for


def test_otel_sdk_disabled_exports_nothing(env: dict[str, str]) -> None:
    with OtlpReceiver() as otlp:
        call_sample_task({**env, "OTEL_EXPORTER_OTLP_ENDPOINT": otlp.url, "OTEL_SDK_DISABLED": "true"})
    assert otlp.posts == 0


def test_without_otel_variables_no_sdk_is_loaded() -> None:
    script = (
        "import sys\nfrom host_receiver.cli._telemetry import exporting\n"
        "with exporting({'PATH': '/bin'}):\n    pass\n"
        "print(any(m.startswith('opentelemetry.sdk') for m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_ctrl_c_flushes_what_was_recorded(env: dict[str, str]) -> None:
    command = peer_command("python")
    with OtlpReceiver() as otlp:
        argv = ["--log-level", "INFO", "run", "--", *command.argv]
        code, _, stderr = interrupted(
            {**env, "OTEL_EXPORTER_OTLP_ENDPOINT": otlp.url}, "connected to py-peer", *argv
        )
        assert code == 0, stderr
    (session,) = otlp.metrics["mcp.client.session.duration"]
    assert session.count == 1
