"""How the tests run the ``host-receiver`` command, as a user runs it (a subprocess)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

_SCRIPT = Path(sys.executable).with_name("host-receiver")
#: The command: the installed script beside this Python, else the same entry point by module.
CLI = (
    [str(_SCRIPT)]
    if _SCRIPT.exists()
    else [sys.executable, "-c", "from host_receiver.cli import main; main()"]
)
#: A safety net against a hung command (seconds), never a measure of speed.
LIMIT_S = 60


def start_cli(env: Mapping[str, str], *args: str) -> subprocess.Popen[str]:
    """``host-receiver *args`` started with exactly ``env``, its output read as text."""
    return subprocess.Popen(
        [*CLI, *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_cli(env: Mapping[str, str] | None, *args: str) -> subprocess.CompletedProcess[str]:
    """``host-receiver *args`` run to its end with ``env`` (None: this process's), stdin closed."""
    return subprocess.run(
        [*CLI, *args], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=LIMIT_S
    )


def cli_env(tmp: Path) -> dict[str, str]:
    """This process's environment with no user configuration (the offline echo provider), no
    saved decisions (a file under ``tmp``) and bounded peer waits."""
    return {
        **os.environ,
        "HOST_RECEIVER_CONFIG": str(tmp / "absent-config.toml"),
        "HOST_RECEIVER_DECISIONS": str(tmp / "decisions.json"),
        "PEER_WAIT_S": "20",
    }


def interrupted(env: Mapping[str, str], marker: str, *args: str) -> tuple[int, str, str]:
    """``host-receiver *args`` sent Ctrl-C (SIGINT) once ``marker`` shows on stderr (failing the
    test if it never does); its exit code, stdout and stderr."""
    proc = start_cli(env, *args)
    watchdog = threading.Timer(LIMIT_S, proc.kill)  # a hung command fails instead of hanging
    watchdog.start()
    seen = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            seen.append(line)
            if marker in line:
                break
        else:
            raise AssertionError(f"never saw {marker!r}: {''.join(seen)}")
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=LIMIT_S)
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, stdout, "".join(seen) + stderr
