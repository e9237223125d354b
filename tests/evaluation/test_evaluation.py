import pytest

from router.evaluation.metrics import score_ranking


def test_single_group_metrics() -> None:
    metrics = score_ranking([7, 3, 9], [frozenset({3})])
    assert metrics["recall@1"] == 0.0
    assert metrics["recall@3"] == 1.0
    assert metrics["all_hit@3"] == 1.0
    assert metrics["mrr"] == pytest.approx(0.5)
    assert metrics["ndcg@10"] == pytest.approx(1 / 1.5849625, rel=1e-6)


def test_any_member_of_a_group_satisfies_it() -> None:
    metrics = score_ranking([5, 1], [frozenset({1, 2}), frozenset({5})])
    assert metrics["recall@1"] == 0.5
    assert metrics["all_hit@1"] == 0.0
    assert metrics["recall@3"] == 1.0
    assert metrics["all_hit@3"] == 1.0
    assert metrics["ndcg@10"] == pytest.approx(1.0)


def test_a_missed_group_and_an_empty_group_count_as_misses() -> None:
    metrics = score_ranking([1, 2, 3], [frozenset({2}), frozenset()])
    assert metrics["recall@10"] == 0.5
    assert metrics["all_hit@10"] == 0.0
    assert metrics["mrr"] == 0.5


def test_nothing_found_scores_zero() -> None:
    metrics = score_ranking([], [frozenset({1})])
    assert all(value == 0.0 for value in metrics.values())
