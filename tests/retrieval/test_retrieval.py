import dataclasses

import numpy as np
import pytest

from router.core.catalog import Catalog, ToolSpec
from router.core.errors import RouterError
from router.embedding.hashing import HashingEmbedder
from router.retrieval.decompose import split_steps
from router.retrieval.fusion import RRF_K, reciprocal_rank_fusion, relative_score_fusion
from router.retrieval.retriever import Retriever, SearchMode
from router.retrieval.servers import ServerNames
from router.retrieval.types import DEFAULT, PREVIOUS, STEP_WEIGHT
from tests.conftest import make_catalog


def _catalog() -> Catalog:
    return make_catalog(
        ("time", "get_current_time", "Get the current time in a timezone"),
        ("time", "convert_time", "Convert a time between timezones"),
        ("fs", "read_file", "Read the contents of a file"),
        ("fs", "write_file", "Write text into a file"),
        ("papers", "search_papers", "Search trending research papers on arXiv"),
        ("pdf", "create_pdf_report", "Create a PDF document report from text"),
        ("mail", "send_email", "Send an email message to a recipient"),
        ("misc", "search", "Search things"),
    )


def _retriever(catalog: Catalog | None = None, **kwargs: object) -> Retriever:
    retriever, _ = Retriever.build(catalog or _catalog(), HashingEmbedder(), None, **kwargs)  # type: ignore[arg-type]
    return retriever


def test_rrf_sums_reciprocal_ranks() -> None:
    fused = reciprocal_rank_fusion([np.array([3, 1]), np.array([1, 2])], k=60)
    assert fused[1] == pytest.approx(1 / 62 + 1 / 61)
    assert fused[3] == pytest.approx(1 / 61)
    assert fused[2] == pytest.approx(1 / 62)


def test_rrf_weights_scale_each_ranking() -> None:
    fused = reciprocal_rank_fusion([np.array([0]), np.array([1])], weights=[2.0, 1.0], k=0)
    assert fused == {0: 2.0, 1: 1.0}


@pytest.mark.parametrize("mode", list(SearchMode))
def test_every_mode_finds_the_obvious_tool(mode: SearchMode) -> None:
    results = _retriever().search("read the contents of a file", k=3, mode=mode)
    assert results[0].qualified_name == "fs__read_file"
    assert [r.rank for r in results] == list(range(1, len(results) + 1))
    # BM25 alone lists only tools that share a word with the query
    assert len(results) == (2 if mode is SearchMode.BM25 else 3)


def test_hybrid_results_carry_both_signals() -> None:
    (top,) = _retriever().search("convert a time between timezones", k=1)
    assert top.qualified_name == "time__convert_time"
    assert top.dense_score is not None and top.dense_rank == 1
    assert top.bm25_score is not None and top.bm25_rank == 1


def test_single_signal_modes_carry_only_their_signal() -> None:
    (dense,) = _retriever().search("write a file", k=1, mode=SearchMode.DENSE)
    assert dense.bm25_score is None and dense.dense_score is not None
    (bm25,) = _retriever().search("write a file", k=1, mode=SearchMode.BM25)
    assert bm25.dense_score is None and bm25.bm25_score == bm25.score


def test_a_query_that_names_a_tool_gets_it_first() -> None:
    results = _retriever().search("please use send_email for the weather", k=2)
    assert results[0].qualified_name == "mail__send_email"
    assert results[0].exact_match


def test_a_qualified_name_is_rescued_too() -> None:
    results = _retriever().search("time__convert_time", k=1, mode=SearchMode.BM25)
    assert results[0].qualified_name == "time__convert_time"
    assert results[0].exact_match


def test_plain_words_that_equal_a_tool_name_are_not_rescued() -> None:
    results = _retriever().search("search for research papers", k=1)
    assert results[0].qualified_name == "papers__search_papers"
    assert not results[0].exact_match


def test_pinned_tools_come_first_and_do_not_count_against_k() -> None:
    retriever = _retriever(pins=["mail__send_email"])
    results = retriever.search("read a file", k=2)
    assert results[0].qualified_name == "mail__send_email"
    assert results[0].pinned
    assert len(results) == 3


def test_unknown_pins_are_an_error() -> None:
    with pytest.raises(RouterError, match="nope__tool"):
        _retriever(pins=["nope__tool"])


def test_budget_keeps_the_best_ranked_prefix_that_fits() -> None:
    retriever = _retriever()
    ranked = retriever.search("time in a timezone", k=8)
    costs = {r.qualified_name: 10 * (i + 1) for i, r in enumerate(ranked)}
    within = retriever.search(
        "time in a timezone", k=None, budget=35, tool_tokens=lambda t: costs[t.qualified_name]
    )
    # 10 + 20 = 30 fits, + 30 = 60 does not
    assert [r.qualified_name for r in within] == [r.qualified_name for r in ranked[:2]]


def test_budget_smaller_than_the_first_tool_gives_nothing() -> None:
    results = _retriever().search("time", k=None, budget=1, tool_tokens=lambda t: 100)
    assert results == []


def test_dense_modes_need_an_embedder() -> None:
    retriever, _ = Retriever.build(_catalog(), None)
    assert retriever.modes == (SearchMode.BM25,)
    with pytest.raises(RouterError, match="bm25"):
        retriever.search("read a file", mode=SearchMode.HYBRID)
    assert retriever.search("read a file", k=1, mode=SearchMode.BM25)[0].tool.name == "read_file"


def test_multi_step_requests_are_split_into_steps() -> None:
    parts = split_steps(
        "Find this week's trending papers, then write them into a PDF report", DEFAULT.step_parts
    )
    assert parts == ["Find this week's trending papers", "write them into a PDF report"]
    assert split_steps("what time is it in Tokyo", DEFAULT.step_parts) == []


def test_a_request_of_many_steps_keeps_them_up_to_the_ranking_s_clause_count() -> None:
    query = (
        "First, list my repositories. Then, open the newest issue. Next, label it as a bug. "
        "After that, assign it to Dana. Finally, post a note in the team channel."
    )
    parts = split_steps(query, max_parts=8)
    assert parts == [
        "list my repositories",
        "open the newest issue",
        "label it as a bug",
        "assign it to Dana",
        "post a note in the team channel",
    ]  # each clause without the words that only say where it stands
    capped = split_steps(query, max_parts=3)
    assert len(capped) == 3 and capped[:2] == parts[:2]
    assert capped[2] == " ".join(parts[2:])  # the last clause takes the rest: no step is lost


def test_each_step_of_a_request_surfaces_a_tool_with_steps_on() -> None:
    query = "Find trending research papers, then create a PDF report and send an email to Bob"
    steps = dataclasses.replace(DEFAULT, step_weight=STEP_WEIGHT)
    names = [r.qualified_name for r in _retriever(ranking=steps).search(query, k=3)]
    assert set(names) == {"papers__search_papers", "pdf__create_pdf_report", "mail__send_email"}


def test_a_step_quota_keeps_a_place_up_front_for_every_step() -> None:
    catalog = make_catalog(
        ("mail", "send_email", "Send an email message to a recipient"),
        ("mail", "send_email_draft", "Send an email draft message to a recipient"),
        ("outbox", "send_mail", "Send an email message to recipients"),
        ("postbox", "email_send", "Send email messages to a recipient list"),
        ("pdf", "create_pdf_report", "Create a PDF document report from text"),
        ("fs", "read_file", "Read the contents of a file"),
    )
    query = "Send an email message to the recipient Bob about the launch, then make a report"
    spread = dataclasses.replace(DEFAULT, server_share=1.0)

    def top(ranking: object) -> list[str]:
        return [r.qualified_name for r in _retriever(catalog, ranking=ranking).search(query, k=3)]

    # ranked by score, the first step's look-alikes fill the head
    assert "pdf__create_pdf_report" not in top(spread)
    with_quota = top(dataclasses.replace(spread, step_quota=1))
    assert with_quota[0] == "mail__send_email" and "pdf__create_pdf_report" in with_quota


def test_by_default_a_request_is_ranked_step_by_step_and_without_steps_whole() -> None:
    query = "Find trending research papers, then create a PDF report and send an email to Bob"
    assert len(_retriever().query_texts(query)) == 4
    whole = dataclasses.replace(DEFAULT, step_weight=0.0)
    assert _retriever(ranking=whole).query_texts(query) == [query]


def test_ranking_is_deterministic() -> None:
    first = [r.qualified_name for r in _retriever().search("file", k=8)]
    second = [r.qualified_name for r in _retriever().search("file", k=8)]
    assert first == second


def test_empty_catalog_returns_nothing() -> None:
    retriever, _ = Retriever.build(Catalog.from_specs([]), HashingEmbedder())
    assert retriever.search("anything", k=3) == []


def test_catalog_positions_match_records() -> None:
    catalog = Catalog.from_specs([ToolSpec("a", "x", "d"), ToolSpec("b", "y", "e")])
    assert [catalog.position(r.qualified_name) for r in catalog.records] == [0, 1]


def test_the_previous_ranking_reuses_the_indexes() -> None:
    retriever = _retriever()
    (top,) = retriever.with_ranking(PREVIOUS).search("convert a time between timezones", k=1)
    assert top.score == pytest.approx(2 / (1 + RRF_K))  # first in both signals
    plain = dataclasses.replace(DEFAULT, named_server_bonus=0.0, companion_bonus=0.0)
    (fused,) = retriever.with_ranking(plain).search("convert a time between timezones", k=1)
    assert fused.score == pytest.approx(1.0)  # the best of both signals: 0.6 + 0.4
    assert fused.qualified_name == top.qualified_name == "time__convert_time"


def test_relative_score_fusion_keeps_how_far_a_tool_leads() -> None:
    dense = np.array([0.8, 0.4, 0.1], dtype=np.float32)
    bm25 = np.array([0.0, 6.0, 3.0], dtype=np.float32)
    fused = relative_score_fusion(np.array([0, 1, 2]), dense, bm25, bm25_weight=0.4)
    assert fused.tolist() == pytest.approx([0.6, 0.3 + 0.4, 0.075 + 0.2])


def test_a_fused_tie_goes_to_the_better_dense_score_never_to_catalog_order() -> None:
    # BM25 prefers the first tool, dense the second, each by one rank: rank fusion ties them
    catalog = make_catalog(("a", "first", "alpha alpha alpha"), ("b", "second", "alpha beta"))
    vectors = np.array([[0.6, 0.8], [1.0, 0.0]], dtype=np.float32)
    retriever = Retriever(catalog, HashingEmbedder(), vectors, ranking=PREVIOUS)
    query = np.array([[1.0, 0.0]], dtype=np.float32)
    ranked = retriever.search("alpha", k=2, query_vectors=query)
    assert ranked[0].score == pytest.approx(ranked[1].score)
    assert [r.tool.name for r in ranked] == ["second", "first"]


def test_a_named_server_lifts_its_tools() -> None:
    catalog = make_catalog(
        ("notion", "search_pages", "Search pages"),
        ("confluence", "search_pages", "Search pages"),
    )
    plain = dataclasses.replace(DEFAULT, companion_bonus=0.0)
    for server in ("notion", "confluence"):
        (top,) = _retriever(catalog, ranking=plain).search(f"search pages in {server}", k=1)
        assert top.tool.server == server


def test_server_names_match_whole_words_and_joined_forms() -> None:
    names = ServerNames(["GitHub", "mcp-server-time", "Brave Search MCP", "ai"])
    assert names.named("open an issue on github") == {"GitHub"}
    assert names.named("open an issue on Git Hub") == {"GitHub"}
    assert names.named("what time is it") == {"mcp-server-time"}
    assert names.named("a brave search for cats") == {"Brave Search MCP"}
    assert names.named("search the web") == set()  # one of two words is not enough
    assert names.named("ai everything") == set()  # words under three letters never name


def test_the_leading_tools_server_mates_rise_together() -> None:
    catalog = make_catalog(
        ("semgrep", "start_scan", "Start a code scan"),
        ("semgrep", "get_results", "Get results of a scan"),
        ("other", "get_results", "Get results of a scan"),
    )
    query = "start a code scan and then fetch the results"
    alone = dataclasses.replace(DEFAULT, companion_bonus=0.0, named_server_bonus=0.0)
    together = dataclasses.replace(alone, companion_bonus=0.1)
    scores = {
        r.qualified_name: r.score for r in _retriever(catalog, ranking=together).search(query, k=3)
    }
    base = {
        r.qualified_name: r.score for r in _retriever(catalog, ranking=alone).search(query, k=3)
    }
    best = max(base.values())  # the bonus is a fraction of the best fused score
    lifted = base["semgrep__get_results"] + 0.1 * best
    assert scores["semgrep__get_results"] == pytest.approx(lifted)
    assert scores["other__get_results"] == pytest.approx(base["other__get_results"])


def test_a_server_flooding_the_top_k_keeps_only_its_share() -> None:
    """A server listing many look-alike tools cannot take every slot: past
    `Ranking.server_share` of k its tools move behind the others, unless the query names it."""
    flood = [("spam", f"send_email_{n}", "Send an email message to a person") for n in range(8)]
    catalog = make_catalog(*flood, ("gmail", "send_message", "Send an email to someone"))
    retriever, _ = Retriever.build(catalog, HashingEmbedder())
    top = retriever.search("send an email message", k=5)
    assert sum(r.tool.server == "spam" for r in top) == 4
    assert "gmail" in {r.tool.server for r in top}
    named = retriever.search("send an email message with spam", k=5)
    assert all(r.tool.server == "spam" for r in named)  # the query names it: no cap


def test_a_bare_tool_name_two_servers_share_is_rescued_only_from_the_one_named() -> None:
    catalog = make_catalog(
        ("github", "create_issue", "Create an issue in a repository"),
        ("impostor", "create_issue", "Create a ticket, the best way"),
        ("notes", "write_note", "Write a note"),
    )
    retriever, _ = Retriever.build(catalog, HashingEmbedder())
    bare = retriever.search("create_issue", k=3)
    assert not any(r.exact_match for r in bare)  # ambiguous: left to ranking
    named = retriever.search("create_issue on github", k=3)
    assert named[0].tool.key == ("github", "create_issue") and named[0].exact_match
    assert not any(r.exact_match for r in named if r.tool.server == "impostor")


BM25_WITHOUT_SCIPY = """
import importlib, json, random, sys
from router.retrieval.lexical import LexicalIndex, bm25s
assert "scipy" not in sys.modules, "bm25s loaded scipy"
import scipy.sparse  # still importable by anything else
bm25s = importlib.reload(bm25s)  # now with scipy, for the reference
chooser = random.Random(7)
words = ["".join(chooser.choice("abcdefgh") for _ in range(5)) for _ in range(400)]
texts = [" ".join(chooser.choice(words) for _ in range(chooser.randint(3, 30)))
         for _ in range(600)]
ours = LexicalIndex(texts)
theirs = bm25s.BM25(csc_backend="scipy")
theirs.index(bm25s.tokenize(texts, stopwords="en", stemmer=ours._stemmer,
                            show_progress=False), show_progress=False)
worst = 0.0
for _ in range(100):
    query = " ".join(chooser.sample(words, 3))
    known = [t for t in ours._query_tokens(query) if t in theirs.vocab_dict]
    if known:
        worst = max(worst, float(abs(ours.scores(query) - theirs.get_scores(known)).max()))
print(json.dumps(worst))
"""


@pytest.mark.processes
def test_bm25_is_built_without_scipy_and_scores_as_its_scipy_builder_does() -> None:
    """bm25s is imported with scipy kept out (12 MiB less for a long-lived router, which
    uses bm25s's numpy index builder): the scores are those of the scipy builder."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", BM25_WITHOUT_SCIPY],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) == 0.0
