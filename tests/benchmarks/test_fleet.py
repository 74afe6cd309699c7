"""The fleet benchmark: a tiny real run on PostgreSQL, its lines, and its skip without PostgreSQL.

No timing is asserted; the smoke run (CI) runs the whole scenario.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from benchmarks import fleet, run
from benchmarks.fleet import Size, run_mode, store_cost, summary
from host_receiver.store import open_store
from tests.postgres_cluster import NO_POSTGRES


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["notify", "poll"])
def test_every_hosts_items_are_listed_answered_through_the_api_and_delivered(
    postgres_url: str, tmp_path: Path, mode: str
) -> None:
    measured = anyio.run(run_mode, postgres_url, mode, Size(items=3), tmp_path)

    assert "failure" not in measured, measured.get("failure")
    assert (measured["items"], measured["answered"], measured["delivered"]) == (9, 9, 9)
    assert measured["answered_per_s"] > 0 and measured["delivery_p99_ms"] >= measured["delivery_p50_ms"] > 0
    # Each delivery is split into its stages, or counted as found by a poll (all of them without LISTEN).
    stages = measured["stages"]
    assert stages["answer -> notified"]["n"] + stages["by a poll"]["n"] == 9
    assert stages["answer -> notified"]["n"] == stages["read begun -> read"]["n"]
    if mode == "poll":
        assert stages["by a poll"]["n"] == 9

    # What the store holds afterwards: nine answers by the person, from three hosts, in the audit chain.
    async def read() -> tuple[set[str | None], set[str | None], bool]:
        async with open_store(postgres_url) as store:
            audit = await store.audit()
            return (
                {row.host for row in audit},
                {row.person for row in audit},
                await store.verify_audit() is None,
            )

    hosts, people, intact = anyio.run(read)
    assert hosts == {"worker-1", "worker-2", "worker-3"} and people == {"ann"} and intact


def test_the_summary_puts_the_notify_p99_beside_its_target_and_polling_beside_it() -> None:
    def measured(p50: float, p99: float) -> dict[str, object]:
        return {
            "results": {
                "items": 3000,
                "answered_per_s": 250.0,
                "delivery_p50_ms": p50,
                "delivery_p99_ms": p99,
                "list_ms": 80.0,
                "add_p50_ms": 1.5,
            }
        }

    lines = summary({"notify": measured(4.0, 30.0), "poll": measured(500.0, 990.0)}).splitlines()
    assert lines[0] == "Fleet on PostgreSQL: 3 hosts x 1,000 items, 2 inbox serve, one person"
    assert lines[1].startswith(
        "- LISTEN/NOTIFY: answered 250.0 items/s; answer -> host p50 4.0 ms, p99 30.0 ms"
    )
    assert "(target p99 <= 100 ms: yes)" in lines[1]
    assert lines[2].startswith("- polling only:") and "p99 990.0 ms;" in lines[2] and "target" not in lines[2]

    slow = summary({"notify": measured(40.0, 150.0), "poll": {"failure": "worker-2: not every item"}})
    assert "(target p99 <= 100 ms: NO)" in slow
    assert (
        "- polling only: answered n/a items/s" in slow and "- poll failed: worker-2: not every item" in slow
    )


def test_the_store_cost_compares_the_default_memory_store_with_a_shared_one() -> None:
    def create(p50: float) -> dict[str, object]:
        return {"results": {"create_seq": {"n": 2000, "p50_us": p50}}}

    lines = store_cost({"cli": create(200.0), "cli+sqlite-store": create(210.0)}, "cli+sqlite-store")
    assert lines.splitlines()[1:] == [
        "- --store memory (the default; opens no store, the same as none): 200",
        "- --store sqlite:///FILE (a shared store opened beside it): 210 (1.05); target: within noise",
    ]


def test_without_postgresql_the_smoke_run_skips_the_fleet_saying_why_and_succeeds(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(fleet, "postgres_binaries", lambda: None)

    run.main(["--smoke", "--no-setup", "--scenarios", "fleet"])

    out, err = capsys.readouterr()
    assert f"Fleet on PostgreSQL: skipped ({NO_POSTGRES})" in out
    assert f"fleet    skipped: {NO_POSTGRES}" in err
