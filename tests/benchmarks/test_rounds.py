"""The benchmark driver's merging of interleaved rounds (no timing is asserted)."""

from __future__ import annotations

from benchmarks.run import median_of


def test_every_number_is_the_median_of_its_rounds_and_stays_an_observed_value() -> None:
    rounds = [
        {"results": {"create_seq": {"n": 2000, "p50_us": 300.0}, "get_pipe": {"per_s": 30_000.0}}},
        {"results": {"create_seq": {"n": 2000, "p50_us": 180.0}, "get_pipe": {"per_s": 41_000.0}}},
        {"results": {"create_seq": {"n": 2000, "p50_us": 210.0}, "get_pipe": {"per_s": 35_000.0}}},
    ]
    merged = median_of(rounds)
    assert merged["results"]["create_seq"] == {"n": 2000, "p50_us": 210.0}
    assert merged["results"]["get_pipe"] == {"per_s": 35_000.0}
    assert median_of([{"p": 1.0}, {"p": 2.0}]) == {"p": 1.0}  # an even count takes the lower middle


def test_lists_merge_item_by_item_and_text_is_the_first_rounds() -> None:
    rounds = [
        {
            "scenario": "scale",
            "levels": [{"tasks": 1000, "get_p50_us": 90.0}, {"tasks": 100_000, "get_p50_us": 99.0}],
        },
        {
            "scenario": "scale",
            "levels": [{"tasks": 1000, "get_p50_us": 70.0}, {"tasks": 100_000, "get_p50_us": 80.0}],
        },
        {
            "scenario": "scale",
            "levels": [{"tasks": 1000, "get_p50_us": 80.0}, {"tasks": 100_000, "get_p50_us": 120.0}],
        },
    ]
    merged = median_of(rounds)
    assert merged["scenario"] == "scale"
    assert merged["levels"] == [{"tasks": 1000, "get_p50_us": 80.0}, {"tasks": 100_000, "get_p50_us": 99.0}]


def test_a_failure_in_any_round_stands() -> None:
    merged = median_of([{"results": {"n": 1}}, {"results": {"n": 1}, "failure": "exit status 1: boom"}])
    assert merged["failure"] == "exit status 1: boom"
