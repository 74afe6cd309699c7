"""The providers' tests: the ``openai`` SDK's backoff, shortened where a test counts retries."""

from __future__ import annotations

import pytest


@pytest.fixture
def quick_sdk_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``openai`` SDK's wait before retrying a dropped connection (0.5 s, less up to a
    quarter), made 0.01 s: a test that asks for it checks that the call is retried, and on what,
    not the pace (a backend's ``retry-after`` is honoured as before)."""
    from openai import _base_client

    monkeypatch.setattr(_base_client, "INITIAL_RETRY_DELAY", 0.01)
