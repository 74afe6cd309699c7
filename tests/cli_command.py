"""How the tests run the ``host-receiver`` command, as a user runs it (a subprocess)."""

from __future__ import annotations

import os
import subprocess
import sys
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
