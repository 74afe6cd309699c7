"""A stdio server that will not leave: it ignores SIGTERM and the end of its input.

It answers ``initialize`` (its pid in ``instructions``), and once its input ends it
sleeps until it is killed: the client's shutdown must escalate to SIGKILL.
"""

from __future__ import annotations

import os
import signal
import time

from _jsonlines import handshake, read

signal.signal(signal.SIGTERM, signal.SIG_IGN)
handshake("stubborn", instructions=f"pid {os.getpid()}")
while read() is not None:
    pass
while True:
    time.sleep(60)
