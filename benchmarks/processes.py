"""Ending the processes a benchmark started (receivers, requestors, peer servers)."""

from __future__ import annotations

import anyio
import anyio.abc


async def stop(process: anyio.abc.Process) -> None:
    """End ``process`` if it still runs: SIGTERM, then SIGKILL after 5 s."""
    if process.returncode is None:
        process.terminate()
        with anyio.move_on_after(5):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()
    await process.aclose()
