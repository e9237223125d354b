"""docs/environment.md lists every environment variable the router reads: a new
`os.environ.get("X")` (or a `*_VARIABLE = "X"` constant, or any `MCP_ROUTER_X` name) under
router/ fails here until the page says what X does."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "environment.md"
_READS = [
    re.compile(r"""environ(?:\.get|\.setdefault)?\(\s*["']([A-Z][A-Z0-9_]*)["']"""),
    re.compile(r"""environ\[\s*["']([A-Z][A-Z0-9_]*)["']\s*\]"""),
    re.compile(r"""getenv\(\s*["']([A-Z][A-Z0-9_]*)["']"""),
    re.compile(
        r"""^\s*\w*(?:VARIABLE|_ENV|_FLAGS)\w*\s*(?::[^=]+)?=\s*["']([A-Z][A-Z0-9_]*)["']""", re.M
    ),
    re.compile(r"""^\s*["']([A-Z][A-Z0-9_]*_[A-Z0-9_]*)["']\s*:""", re.M),
    re.compile(r"""\b(MCP_ROUTER_[A-Z0-9_]*[A-Z0-9])\b"""),
]


def variables_read(root: Path) -> set[str]:
    """The environment variable names the Python files under `root` read."""
    found: set[str] = set()
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for pattern in _READS:
            found.update(pattern.findall(text))
    return found


def unlisted(root: Path, page: str) -> list[str]:
    return sorted(name for name in variables_read(root) if f"`{name}`" not in page)


def test_every_variable_the_router_reads_is_on_the_page() -> None:
    read = variables_read(ROOT / "router")
    assert {"MCP_ROUTER_EMBED_THREADS", "ROUTER_TOKEN", "OTEL_TRACES_EXPORTER"} <= read
    assert unlisted(ROOT / "router", PAGE.read_text(encoding="utf-8")) == []


def test_the_check_sees_a_variable_the_page_leaves_out(tmp_path: Path) -> None:
    (tmp_path / "reads.py").write_text(
        'import os\nLIMIT = os.environ.get("MCP_ROUTER_NEW_LIMIT")\nTOKEN_VARIABLE = "SOME_TOKEN"\n'
    )
    assert unlisted(tmp_path, "`SOME_OTHER`") == ["MCP_ROUTER_NEW_LIMIT", "SOME_TOKEN"]
