"""The soak's figures from its readings and tallies, the checks they are held to, and the
markdown of benchmarks/README.md's soak section (made from the result file alone)."""

from __future__ import annotations

import shlex
from typing import Any

from benchmarks.soak.monitor import Reading
from benchmarks.soak.traffic import Tally

RSS_GROWTH_LIMIT = 10.0
"""Percent the router's RSS may grow from the end of the warm-up to the end of the run."""
README_ROWS = 12
"""Rows of the README's table of readings over time, at most."""


def _mib(kib: float) -> float:
    return round(kib / 1024, 1)


def _growth(before: float, after: float) -> float:
    return round((after - before) / before * 100, 2) if before else 0.0


def requests(tally: Tally, seconds: float) -> dict[str, Any]:
    """Counts by kind, failures, throughput."""
    total = sum(tally.requests.values())
    searches = tally.requests["search_tools"]
    return {
        "total": total,
        "by_kind": dict(sorted(tally.requests.items())),
        "failed": sum(tally.failures.values()),
        "failed_by_kind": dict(sorted(tally.failures.items())),
        "errors": tally.errors,
        "per_s": round(total / seconds, 1) if seconds else 0.0,
        "search_found_the_task_tool_percent": round(100 * tally.search_hits / searches, 1)
        if searches
        else None,
        "sessions_opened_by_mode": dict(sorted(tally.sessions.items())),
    }


def memory(start: Reading, end: Reading, series: list[Reading]) -> dict[str, Any]:
    """RSS of the router and of its children at the end of the warm-up, at the end, the
    most seen, and the growth between the first two; under load, the first and the last
    reading of the run."""
    loaded = [r for r in series if r.phase == "run"]
    first, last = (loaded[0], loaded[-1]) if loaded else (start, end)
    every = [*series, start, end]

    def children(reading: Reading) -> int:
        return sum(c.rss_kib for c in reading.children)

    return {
        "router_rss_mib": {
            "warmup_end": _mib(start.router.rss_kib),
            "end": _mib(end.router.rss_kib),
            "max": _mib(max(r.router.rss_kib for r in every)),
            "growth_percent": _growth(start.router.rss_kib, end.router.rss_kib),
            "under_load_first": _mib(first.router.rss_kib),
            "under_load_last": _mib(last.router.rss_kib),
            "under_load_growth_percent": _growth(first.router.rss_kib, last.router.rss_kib),
        },
        "children_rss_mib": {
            "count_warmup_end": len(start.children),
            "count_end": len(end.children),
            "warmup_end": _mib(children(start)),
            "end": _mib(children(end)),
            "max": _mib(max(children(r) for r in every)),
            "growth_percent": _growth(children(start), children(end)),
        },
    }


def fds(before: Reading, start: Reading, end: Reading, series: list[Reading]) -> dict[str, Any]:
    """Open fds of the router and of its children at the quiet points, and the most the
    router held under load."""
    return {
        "router": {
            "before_warmup": before.router.fds,
            "warmup_end": start.router.fds,
            "end": end.router.fds,
            "max_under_load": max((r.router.fds for r in series), default=None),
        },
        "children": {
            "warmup_end": sum(c.fds for c in start.children),
            "end": sum(c.fds for c in end.children),
        },
    }


def _check(what: str, measured: Any, op: str, limit: Any, unit: str = "") -> dict[str, Any]:
    passed = measured <= limit if op == "<=" else measured == limit
    return {
        "what": what,
        "measured": measured,
        "op": op,
        "limit": limit,
        "unit": unit,
        "pass": passed,
    }


def checks(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Every check of the run: no failed request, the router's RSS and fds, its children's
    RSS and number, no session left open."""
    mem, fd = result["memory"], result["fds"]
    limit = result["settings"]["rss_growth_limit_percent"]
    failed = result["requests"]["failed"] + result["warmup"]["requests"]["failed"]
    kids = mem["children_rss_mib"]
    return [
        _check("failed requests (warm-up and run)", failed, "==", 0),
        _check(
            "router RSS growth, warm-up end to end",
            mem["router_rss_mib"]["growth_percent"],
            "<=",
            limit,
            "%",
        ),
        _check(
            "router open fds, end minus warm-up end",
            fd["router"]["end"] - fd["router"]["warmup_end"],
            "<=",
            0,
        ),
        _check(
            "children's RSS growth, warm-up end to end", kids["growth_percent"], "<=", limit, "%"
        ),
        _check(
            "children at end (warm-up end: the limit)",
            kids["count_end"],
            "==",
            kids["count_warmup_end"],
        ),
        _check("MCP sessions open at end", result["quiet_points"]["end"]["sessions"], "==", 0),
    ]


def command_without_notes(command: str) -> str:
    """The command that ran, less its `--note` texts (they are in `notes`)."""
    words = shlex.split(command)
    kept = [
        word
        for at, word in enumerate(words)
        if not word.startswith("--note") and (at == 0 or words[at - 1] != "--note")
    ]
    return shlex.join(kept)


def _measured(check: dict[str, Any]) -> str:
    unit = check["unit"]
    value = check["measured"]
    shown = f"{value:+.2f}" if unit == "%" else f"{value}"
    return f"{shown} {unit}".strip() if unit != "%" else f"{shown}%"


def _series_rows(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """At most `README_ROWS` readings, evenly spread, the first and the last kept."""
    if len(samples) <= README_ROWS:
        return samples
    step = (len(samples) - 1) / (README_ROWS - 1)
    return [samples[round(i * step)] for i in range(README_ROWS)]


def markdown(result: dict[str, Any]) -> str:
    """The README section: the run, the checks, the requests, memory and fds over time."""
    settings, machine = result["settings"], result["machine"]
    run, mem, fd = result["requests"], result["memory"], result["fds"]
    roles = ", ".join(f"{n} {role}" for role, n in settings["roles"].items())
    dirty = result.get("uncommitted_changes") or []
    note = f" (plus uncommitted changes to {len(dirty)} measured files)" if dirty else ""
    before, after = machine["load_average_before"], machine["load_average_after"]
    lines = [
        f"Run `{command_without_notes(result['command'])}` at commit `{result['commit']}`{note}, "
        f"{result['date']}, on {machine['platform']}, {machine['cpus']} CPUs, load average (1 min) "
        f"{before[0]} before and {after[0]} after: {settings['duration_s'] / 60:g} min after "
        f"a {settings['warmup_s']:g} s warm-up, {settings['clients']} clients ({roles}), "
        f"each at most {settings['rate_per_client_per_s']:g} requests/s, in front of "
        f"{settings['tools']} tools of {len(settings['servers'])} upstreams "
        f"({settings['upstreams']}: {', '.join(settings['servers'])}). "
        f"Overall: **{'pass' if result['pass'] else 'FAIL'}**.",
        "",
        "| check | measured | limit | result |",
        "|---|---|---|---|",
    ]
    for check in result["checks"]:
        limit = f"{check['op']} {check['limit']}{check['unit']}"
        verdict = "pass" if check["pass"] else "**FAIL**"
        lines.append(f"| {check['what']} | {_measured(check)} | {limit} | {verdict} |")
    kinds = ", ".join(f"{kind} {n:,}" for kind, n in run["by_kind"].items())
    opened = ", ".join(f"{mode} {n:,}" for mode, n in run["sessions_opened_by_mode"].items())
    router, kids = mem["router_rss_mib"], mem["children_rss_mib"]
    lines += [
        "",
        f"Requests in the run: {run['total']:,} ({run['per_s']} requests/s), {run['failed']} "
        f"failed; {kinds}. Clients opened: {opened}. The task's tool was in the top 5 of "
        f"{run['search_found_the_task_tool_percent']}% of searches.",
        "",
        "| process | at warm-up end | at end | max | growth |",
        "|---|---|---|---|---|",
        f"| router RSS (MiB) | {router['warmup_end']} | {router['end']} | {router['max']} "
        f"| {router['growth_percent']:+.2f}% |",
        f"| router RSS under load, first and last reading of the run (MiB) "
        f"| {router['under_load_first']} | {router['under_load_last']} | - "
        f"| {router['under_load_growth_percent']:+.2f}% |",
        f"| router open fds | {fd['router']['warmup_end']} | {fd['router']['end']} "
        f"| {fd['router']['max_under_load']} (under load) | "
        f"{fd['router']['end'] - fd['router']['warmup_end']:+d} |",
        f"| {kids['count_end']} children RSS (MiB) | {kids['warmup_end']} | {kids['end']} "
        f"| {kids['max']} | {kids['growth_percent']:+.2f}% |",
        f"| children open fds | {fd['children']['warmup_end']} | {fd['children']['end']} | - "
        f"| {fd['children']['end'] - fd['children']['warmup_end']:+d} |",
        "",
        "| time (s) | phase | router RSS (MiB) | router fds | children RSS (MiB) | sessions |",
        "|---|---|---|---|---|---|",
    ]
    for row in _series_rows(result["samples"]):
        lines.append(
            f"| {row['t_s']:g} | {row['phase']} | {_mib(row['router_rss_kib'])} "
            f"| {row['router_fds']} | {_mib(row['children_rss_kib'])} | {row['sessions']} |"
        )
    lines += ["", "Notes:", "", *(f"- {note}" for note in result["notes"])]
    return "\n".join(lines)
