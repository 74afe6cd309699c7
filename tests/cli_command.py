"""How the tests run the ``host-receiver`` command, as a user runs it (a subprocess)."""

from __future__ import annotations

import sys
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
