"""A stdio peer that reads nothing until a file exists, then reports what it read.

``late_reader.py GATE``: once the file GATE exists, it reads JSON lines until one
has ``params.n == -1`` and answers with one notification ``seen`` whose
``params.ns`` lists every ``params.n`` in the order the lines arrived, and
``params.intact`` says whether every line was whole JSON.
"""

from __future__ import annotations

import json
import os
import sys
import time

from _jsonlines import write

gate = sys.argv[1]
while not os.path.exists(gate):
    time.sleep(0.01)
seen: list[int] = []
intact = True
for line in sys.stdin.buffer:
    try:
        n = json.loads(line)["params"]["n"]
    except (ValueError, KeyError):
        intact = False
        continue
    if n == -1:
        break
    seen.append(n)
write({"jsonrpc": "2.0", "method": "seen", "params": {"ns": seen, "intact": intact}})
