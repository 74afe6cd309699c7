"""``host-receiver run`` sets the garbage collector up after its providers are built.

Contract under test (host_receiver/cli/_run.py ``serve``): what building the
registry made (the provider, its SDK's client, the SDK's modules imported then)
is frozen out of the collector's way before any request is served, as what
start-up made already is (``tune_gc_for_serving`` in ``main``).
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from host_receiver.cli import _run, build_parser
from host_receiver.cli._target import Target, prepare
from host_receiver.client.host import ServerConnection
from providers import build_registry as real_build_registry
from tests.interop import RAW_SERVER


def test_what_building_the_providers_made_is_frozen_before_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        "[providers.fake]\n"
        'type = "openai"\n'
        'base_url = "http://127.0.0.1:9/v1"\n'
        "api_key_required = false\n"
        "[[providers.fake.models]]\n"
        'id = "fake-model"\n'
    )
    monkeypatch.setenv("HOST_RECEIVER_CONFIG", str(config))
    built: list[Any] = []

    def build_registry(**kwargs: Any) -> Any:
        registry = real_build_registry(**kwargs)
        built.append(registry)
        return registry

    monkeypatch.setattr(_run, "build_registry", build_registry)
    args = build_parser().parse_args(
        [
            "run",
            "--provider",
            "fake",
            "--approve",
            "auto",
            "--",
            sys.executable,
            str(RAW_SERVER),
            "--mode",
            "die",
        ]
    )
    target = prepare(args)
    assert isinstance(target, Target)
    collected: list[bool] = []

    async def body(server: ServerConnection) -> int:
        (registry,) = built
        # gc.get_objects() lists every object the collector still walks; frozen ones are not in it.
        collected.append(any(obj is registry for obj in gc.get_objects()))
        return 0

    threshold = gc.get_threshold()
    try:
        assert anyio.run(_run.serve, args, target, body) == 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
    assert collected == [False]
