"""Shared test configuration: anyio's pytest plugin runs every async test on asyncio and on trio.

The library claims anyio, so its tests run on both backends. Modules whose
subject is tied to one backend say so with their own ``anyio_backend``
fixture (the terminal host runs prompt_toolkit on asyncio; the interop suite
tests the peers, not the backend, and runs once on asyncio).
"""

from __future__ import annotations

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)
