"""Every file of the package that the documentation names exists: a module moved or split
leaves no page pointing at where it was (docs/architecture.md says where things live)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [
    ROOT / "README.md",
    ROOT / "CONTRIBUTING.md",
    *sorted((ROOT / "docs").glob("**/*.md")),
    ROOT / "models" / "README.md",
]
_PATH = re.compile(r"\brouter/[A-Za-z0-9_/]+\.py\b")


def missing_paths(pages: list[Path], root: Path = ROOT) -> list[str]:
    """`page: path` for each `router/....py` a page names that is not in the tree."""
    return [
        f"{page.relative_to(root)}: {path}"
        for page in pages
        for path in sorted(set(_PATH.findall(page.read_text(encoding="utf-8"))))
        if not (root / path).is_file()
    ]


def test_every_module_the_pages_name_exists() -> None:
    assert missing_paths(PAGES) == []


def test_the_check_sees_a_page_naming_a_module_that_moved(tmp_path: Path) -> None:
    (tmp_path / "router").mkdir()
    (tmp_path / "router" / "here.py").write_text("")
    page = tmp_path / "page.md"
    page.write_text("See `router/here.py` and `router/gone.py`.\n")
    assert missing_paths([page], tmp_path) == ["page.md: router/gone.py"]
