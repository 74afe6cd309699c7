"""How the tests run the ``host-receiver`` command, as a user runs it (a subprocess)."""

from __future__ import annotations

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
