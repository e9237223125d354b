"""Every module of `router/` stays within a line budget, so that one module keeps owning one
concept (docs/architecture.md#layers). A module over budget is split by concept, or named
below with the reason it cannot be."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "router"

BUDGET = 400
"""Lines per module. Starlette's largest module is under 800 and its median 140; the SDK's
median is 114. At 400 a module still reads in one sitting, and the largest modules today
are each one concept near 350-380 lines."""

EXCEPTIONS: Mapping[str, tuple[int, str]] = {
    "upstream/upstream.py": (
        480,
        "the owner task and the requests other tasks send through it share one private "
        "state, the live client and its end event, which only the owner task may swap; "
        "what their failures become (failures.py), re-listing (relisting.py), health "
        "(health.py) and listing (listing.py) are already apart",
    ),
}
"""Module (path under router/) -> (its own budget, why it is one concept all the same)."""


def over_budget(package: Path = PACKAGE) -> list[str]:
    """Each module longer than its budget, with its length."""
    problems = []
    for path in sorted(package.rglob("*.py")):
        name = path.relative_to(package).as_posix()
        limit, _ = EXCEPTIONS.get(name, (BUDGET, ""))
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            problems.append(f"router/{name}: {lines} lines (budget {limit})")
    return problems


def test_every_module_is_within_its_line_budget() -> None:
    problems = over_budget()
    assert not problems, "split these by concept (or justify them in EXCEPTIONS):\n" + (
        "\n".join(problems)
    )


def test_every_exception_is_still_needed() -> None:
    """An exception whose module shrank back under the budget goes, so the list stays short."""
    stale = [
        name
        for name in EXCEPTIONS
        if len((PACKAGE / name).read_text(encoding="utf-8").splitlines()) <= BUDGET
    ]
    assert not stale, f"no longer over {BUDGET} lines, remove from EXCEPTIONS: {stale}"


def test_the_budget_check_sees_a_long_module(tmp_path: Path) -> None:
    (tmp_path / "short.py").write_text("x = 1\n")
    (tmp_path / "long.py").write_text("x = 1\n" * (BUDGET + 1))
    assert over_budget(tmp_path) == [f"router/long.py: {BUDGET + 1} lines (budget {BUDGET})"]
