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


def test_a_third_signal_is_fused_by_score_relative_to_its_best() -> None:
    import numpy as np

    from benchmarks.sparse_signal import fused_order

    router = [(3, 1.0), (7, 0.9), (1, 0.5)]
    sparse = np.zeros(10, dtype=np.float32)
    sparse[[1, 9]] = [4.0, 2.0]  # the router's third is the sparse signal's best
    assert fused_order(router, sparse, 0.0, 10) == [3, 7, 1]  # weight 0: the router as it is
    # 0.5 + 0.3 * 4/4 = 0.8 stays behind 0.9; at 0.6 (1.1) it goes ahead of both
    assert fused_order(router, sparse, 0.3, 10) == [3, 7, 1, 9]
    assert fused_order(router, sparse, 0.6, 10)[0] == 1
    # the sparse signal's own tops join the candidates, and alone it ranks only what it scores
    assert fused_order(router, sparse, 1.0, 10) == [1, 9]
    assert fused_order(router, sparse, 0.3, 2) == [3, 7]
