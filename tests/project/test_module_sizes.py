"""Every module of `router/` stays within a line budget, so that one module keeps owning one
concept (docs/architecture.md#layers). A module over budget is split by concept, or named
below with the reason it cannot be."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "router"

BUDGET = 400
"""Lines per module. Starlette's largest module is under 800 and its median 140; the SDK's
median is 114. At 400 a module still reads in one sitting, and the largest modules today
are each one concept near 350-380 lines."""

EXCEPTIONS: Mapping[str, tuple[int, str]] = {
    "upstream/upstream.py": (
        500,
        "the owner task and the requests other tasks send through it share one private "
        "state, the live client and its end event, which only the owner task may swap; "
        "what their failures become (failures.py), re-listing (relisting.py), health "
        "(health.py) and listing (listing/) are already apart",
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


FOLDER_BUDGET = 15
"""Modules per folder (besides `__init__`): past it a folder holds more than one concern, and
its concerns become folders of their own (docs/architecture.md opens with the tree)."""


def crowded_folders(package: Path = PACKAGE) -> list[str]:
    """Each folder of the package holding more than `FOLDER_BUDGET` modules."""
    problems = []
    for folder in sorted({path.parent for path in package.rglob("*.py")}):
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        if len(modules) > FOLDER_BUDGET:
            name = folder.relative_to(package.parent).as_posix()
            problems.append(f"{name}/: {len(modules)} modules (budget {FOLDER_BUDGET})")
    return problems


def loose_top_modules(package: Path = PACKAGE) -> list[str]:
    """Modules at the top of the package besides `__init__` and `__main__`: every other module
    lives in the folder of its layer."""
    return sorted(
        p.name for p in package.glob("*.py") if p.name not in ("__init__.py", "__main__.py")
    )


def test_no_folder_holds_more_than_its_budget_of_modules() -> None:
    problems = crowded_folders()
    assert not problems, "group these folders by concern:\n" + "\n".join(problems)


def test_the_top_of_the_package_holds_only_packages() -> None:
    assert loose_top_modules() == []


def test_the_folder_checks_see_a_crowded_folder_and_a_loose_module(tmp_path: Path) -> None:
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "__main__.py").write_text("")
    (tmp_path / "loose.py").write_text("")
    crowded = tmp_path / "crowded"
    crowded.mkdir()
    for n in range(FOLDER_BUDGET + 1):
        (crowded / f"m{n}.py").write_text("")
    assert crowded_folders(tmp_path) == [
        f"{tmp_path.name}/crowded/: {FOLDER_BUDGET + 1} modules (budget {FOLDER_BUDGET})"
    ]
    assert loose_top_modules(tmp_path) == ["loose.py"]
