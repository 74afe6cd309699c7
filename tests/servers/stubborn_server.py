"""A stdio server that will not leave: it ignores SIGTERM and the end of its input.

It answers ``initialize`` (its pid in ``instructions``), and once its input ends it
sleeps until it is killed: the client's shutdown must escalate to SIGKILL.
"""

from __future__ import annotations

import os
import signal
import time

from _jsonlines import read, result

signal.signal(signal.SIGTERM, signal.SIG_IGN)
while (message := read()) is not None:
    if message.get("method") == "initialize":
        result(
            message["id"],
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "serverInfo": {"name": "stubborn", "version": "1"},
                "instructions": f"pid {os.getpid()}",
            },
        )
while True:
    time.sleep(60)
