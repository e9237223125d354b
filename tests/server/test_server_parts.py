"""The server's pure parts: argument validation, pins, the live index, result rendering."""

import anyio
import pytest

from router.accounting.tokens import TokenCounter
from router.core.catalog import Catalog, ToolSpec
from router.core.errors import ArgumentsInvalid
from router.core.meta_tools import meta_tool_records
from router.core.tool_patterns import resolve_pins
from router.embedding.hashing import HashingEmbedder
from router.policy.profiles import EVERYTHING
from router.retrieval.fit import judge
from router.retrieval.types import STEP_WEIGHT, Ranking, ScoredTool
from router.server.calls.validation import validate_arguments
from router.server.lifecycle.readiness import Coverage
from router.server.listing.answer import SearchAnswer
from router.server.listing.index import LiveIndex, Snapshot
from router.server.listing.rendering import structured_results, text_results

SCHEMA = {
    "type": "object",
    "properties": {
        "timezone": {"type": "string"},
        "options": {"type": "object", "properties": {"hour": {"type": "integer"}}},
    },
    "required": ["timezone"],
}


def test_valid_arguments_pass() -> None:
    validate_arguments("t", SCHEMA, {"timezone": "Asia/Tokyo", "options": {"hour": 3}})


def test_invalid_arguments_name_every_field() -> None:
    with pytest.raises(ArgumentsInvalid) as caught:
        validate_arguments("time__now", SCHEMA, {"options": {"hour": "three"}})
    message = str(caught.value)
    assert message.startswith("invalid arguments for time__now:")
    assert "missing required field 'timezone'" in message
    assert "field 'options.hour'" in message
    assert len(caught.value.problems) == 2


def test_a_broken_upstream_schema_is_not_enforced() -> None:
    validate_arguments("bad", {"type": "not-a-type"}, {"anything": 1})


def _specs(*names: str, server: str = "s") -> list[ToolSpec]:
    return [ToolSpec(server, name, f"{name.replace('_', ' ')} tool") for name in names]


def test_pins_match_qualified_names_and_server_globs() -> None:
    catalog = Catalog.from_specs(_specs("a_x", "b_y") + _specs("c", server="t"))
    assert [r.qualified_name for r in resolve_pins(catalog, ["t/*"])] == ["t__c"]
    assert [r.qualified_name for r in resolve_pins(catalog, ["s__a_*", "s__a_x"])] == ["s__a_x"]
    assert resolve_pins(catalog, ["nothing"]) == ()


async def test_live_index_rebuilds_once_for_updates_and_orders_by_server() -> None:
    index = LiveIndex(HashingEmbedder(), None, pins=["b/*"])
    index.submit("b", _specs("read_file", server="b"))
    index.submit("a", _specs("get_time", server="a"))
    with anyio.fail_after(10):
        snapshot = await index.rebuild()
    assert index.ready.is_set()
    assert [r.qualified_name for r in snapshot.catalog.records] == ["a__get_time", "b__read_file"]
    assert [r.qualified_name for r in snapshot.pinned] == ["b__read_file"]
    with anyio.fail_after(10):
        again = await index.rebuild()
    assert again is snapshot  # nothing changed: no new generation


async def test_the_live_index_ranks_with_the_configured_ranking() -> None:
    steps = Ranking(step_weight=STEP_WEIGHT)
    index = LiveIndex(HashingEmbedder(), None, ranking=steps)
    index.submit("a", _specs("one"))
    with anyio.fail_after(10):
        snapshot = await index.rebuild()
    assert snapshot.retriever is not None and snapshot.retriever.ranking == steps
    query = "find the papers, then write a report"
    assert len(snapshot.retriever.query_texts(query)) == 3


async def test_live_index_run_swaps_in_new_tools() -> None:
    index = LiveIndex(HashingEmbedder(), None)
    async with anyio.create_task_group() as group:
        await group.start(index.run)
        index.submit("a", _specs("one"))
        with anyio.fail_after(10):
            await index.wait_changed()
        first = index.snapshot.generation
        index.submit("a", _specs("one", "two"))
        with anyio.fail_after(10):
            await index.wait_changed()
        assert index.snapshot.generation == first + 1
        assert len(index.snapshot.catalog) == 2
        group.cancel_scope.cancel()


def test_meta_tools_are_small_and_named_plainly() -> None:
    search, call = meta_tool_records(5)
    assert (search.qualified_name, call.qualified_name) == ("search_tools", "call_tool")
    assert "default 5" in str(search.input_schema)
    assert TokenCounter().count_tools([search, call]) < 300


def answer(
    query: str,
    results: list[ScoredTool],
    coverage: Coverage | None = None,
    indexed: int = 0,
    floor: float | None = None,
) -> SearchAnswer:
    """A search's answer, as `router.server.listing.answer.search` makes one."""
    snapshot = Snapshot(Catalog.from_specs([]), None, (), 0)
    found = tuple(results)
    return SearchAnswer(
        query,
        5,
        found,
        coverage or Coverage(),
        indexed or len(found),
        (),
        snapshot,
        EVERYTHING,
        judge(found, floor),
    )


def test_search_results_render_as_text_and_structure() -> None:
    record = Catalog.from_specs(
        [
            ToolSpec(
                "time",
                "get_current_time",
                "Get the current time.",
                {
                    "type": "object",
                    "properties": {"tz": {"type": "string", "description": "IANA zone"}},
                    "required": ["tz"],
                },
            )
        ]
    ).records[0]
    results = [ScoredTool(tool=record, rank=1, score=0.5)]
    starting = Coverage(starting=("git",))
    text = text_results(answer("time in Tokyo", results, starting))
    assert "1. time__get_current_time — Get the current time." in text
    assert "- tz (string, required): IANA zone" in text
    assert "Not searched yet, still starting: git" in text
    structured = structured_results(answer("time in Tokyo", results))
    assert structured["tools"][0]["name"] == "time__get_current_time"
    assert structured["tools"][0]["inputSchema"]["required"] == ["tz"]
    assert text_results(answer("nothing", [])) == 'No tools are indexed to search for "nothing".'


def test_search_answers_say_how_many_were_searched_and_when_nothing_is_close() -> None:
    records = Catalog.from_specs(
        [ToolSpec("s", f"tool_{i}", f"Tool number {i}.") for i in range(3)]
    ).records
    weak = [
        ScoredTool(tool=r, rank=i + 1, score=0.1, dense_score=0.1, bm25_score=0.0)
        for i, r in enumerate(records[:2])
    ]
    text = text_results(answer("something vague", weak, indexed=120))
    assert text.startswith('The 2 best of 120 tools for "something vague", best first.')
    assert "larger k (up to 50)" in text
    assert "No tool matches this request well" in text and "may still exist" in text
    assert "from s." in text  # the candidates' server is named
    structured = structured_results(answer("something vague", weak, indexed=120))
    assert (structured["indexed"], structured["close"], structured["maxK"]) == (120, 0, 50)
    assert structured["match"] == {
        "fits": False,
        "bestSimilarity": 0.1,
        "floor": None,
        "servers": [{"name": "s", "about": None}],
    }
    close = [ScoredTool(tool=records[0], rank=1, score=1.0, dense_score=0.7, bm25_score=2.0)]
    assert "No tool matches" not in text_results(answer("tool number", close, indexed=3))
    # a calibrated floor judges by the cosine alone: a shared word does not make a fit
    shared = [ScoredTool(tool=records[0], rank=1, score=1.0, dense_score=0.25, bm25_score=2.0)]
    assert "No tool matches" in text_results(answer("tool", shared, indexed=3, floor=0.3))
    assert "No tool matches" not in text_results(answer("tool", shared, indexed=3, floor=0.2))
    assert structured_results(answer("tool", shared, floor=0.3))["match"]["fits"] is False
    named = [ScoredTool(tool=records[0], rank=1, score=1.0, dense_score=0.1, exact_match=True)]
    assert structured_results(answer("tool_0", named, floor=0.3))["match"]["fits"] is True
    # every tool shown already: no offer of more
    everything = [
        ScoredTool(tool=r, rank=i + 1, score=1.0, bm25_score=1.0) for i, r in enumerate(records)
    ]
    assert "larger k" not in text_results(answer("tool", everything, indexed=3))


def test_coverage_names_starting_and_down_upstreams_and_waits_for_the_model() -> None:
    from router.server.lifecycle.readiness import coverage, describe
    from router.upstream.state import UpstreamState, UpstreamStatus

    def status(name: str, state: UpstreamState, **more: object) -> UpstreamStatus:
        return UpstreamStatus(name=name, state=state, transport="stdio", **more)  # type: ignore[arg-type]

    statuses = {
        "ready": status("ready", UpstreamState.HEALTHY, settled=True),
        "listing": status("listing", UpstreamState.HEALTHY, settled=True),
        "first": status("first", UpstreamState.CONNECTING),
        "broken": status(
            "broken", UpstreamState.UNHEALTHY, settled=True, last_error="exit 3", retry_in=2.0
        ),
        "retrying": status("retrying", UpstreamState.CONNECTING, settled=True, last_error="gone"),
    }
    indexed = {"ready": True, "listing": False, "first": False, "broken": False, "retrying": True}
    found = coverage(statuses, indexed, model_loading=False)
    assert found.starting == ("first", "listing")
    assert [(d.name, d.indexed) for d in found.down] == [("broken", False), ("retrying", True)]
    assert found.unsearched == ("first", "listing", "broken")
    assert not found.complete
    lines = describe(found)
    assert lines[0].startswith("Not searched yet, still starting: first, listing")
    assert "Down, not searched: broken (last error: exit 3; next retry in 2.0 s)." in lines
    listed_but_down = "Down, its tools are listed but calls fail: retrying"
    assert any(line.startswith(listed_but_down) for line in lines)
    settled = coverage({"ready": statuses["ready"]}, {"ready": True}, model_loading=True)
    assert not settled.complete and "model is still loading" in describe(settled)[0]
    assert coverage({"ready": statuses["ready"]}, {"ready": True}, model_loading=False).complete
