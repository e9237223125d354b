"""The benchmark's honest-evaluation parts: the dev/test halves and the bootstrap margins."""

from __future__ import annotations

from benchmarks.suite.bootstrap import paired_margin
from benchmarks.suite.data import half


def test_halves_are_fixed_per_query_and_split_evenly() -> None:
    ids = [f"q-{i}" for i in range(4000)]
    first = [half("msc_bench", i) for i in ids]
    assert first == [half("msc_bench", i) for i in ids]  # no seed, no state: always the same
    share = first.count("dev") / len(first)
    assert 0.47 < share < 0.53
    # another set puts the same ids in other halves: the split is per set
    assert first != [half("bfcl", i) for i in ids]


def test_a_margin_interval_brackets_its_mean_and_reads_the_spread() -> None:
    ours = [1.0] * 60 + [0.0] * 40
    theirs = [1.0] * 50 + [0.0] * 50
    margin = paired_margin(ours, theirs)
    assert margin["low"] < margin["mean"] == 0.1 < margin["high"]
    assert margin["low"] > 0  # ten wins, no losses: the interval stays above zero
    tied = paired_margin([1.0, 0.0] * 50, [0.0, 1.0] * 50)
    assert tied["low"] < 0 < tied["high"]  # as many wins as losses: zero is inside
    assert paired_margin(ours, ours) == {"mean": 0.0, "low": 0.0, "high": 0.0}
