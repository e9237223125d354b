"""mkdocs hook (mkdocs.yml `hooks:`): links from docs/ to the rest of the repository.

The pages are read on GitHub too, where `../benchmarks/README.md#the-reranker-rerankpy` is a
working link; mkdocs only knows the pages under docs/ and would report it as not found. So
each such link is checked here instead (the file exists, and so does the heading its anchor
names, by GitHub's rule for heading anchors) and rewritten into a link to the file on the
repository's site (`repo_url`), or, without one, into the path as plain text. A broken one is
a warning, which `mkdocs build --strict` turns into a failure.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from mkdocs.plugins import get_plugin_logger

log = get_plugin_logger("repository-links")

_LINK = re.compile(r"(?<!!)\[([^\]]*)\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^(```|~~~)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: markup and punctuation dropped, spaces to `-`."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@functools.cache
def anchors_of(path: Path) -> frozenset[str]:
    """Every heading anchor of a markdown file, numbered on repeats as GitHub does."""
    seen: dict[str, int] = {}
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        heading = None if fenced else _HEADING.match(line)
        if heading is None:
            continue
        anchor = github_anchor(heading.group(1))
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        if count:
            seen[f"{anchor}-{count}"] = 1
    return frozenset(seen)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Check and rewrite every link that leaves docs/ (fenced code is left alone)."""
    docs = Path(config["docs_dir"]).resolve()
    root = docs.parent
    source = (docs / page.file.src_path).parent
    repo_url = (config.get("repo_url") or "").rstrip("/")
    out: list[str] = []
    fenced = False
    for line in markdown.splitlines(keepends=True):
        if _FENCE.match(line):
            fenced = not fenced
        if fenced or "](" not in line:
            out.append(line)
            continue

        def rewrite(match: re.Match[str]) -> str:
            text, target = match.group(1), match.group(2)
            if "://" in target or target.startswith(("#", "mailto:")):
                return match.group(0)
            path_part, _, anchor = target.partition("#")
            resolved = (source / path_part).resolve()
            if not path_part or resolved.is_relative_to(docs):
                return match.group(0)
            where = f"{page.file.src_path}: link to '{target}'"
            if not resolved.is_relative_to(root) or not resolved.exists():
                log.warning("%s: no such file in the repository", where)
                return match.group(0)
            relative = resolved.relative_to(root).as_posix()
            if anchor and resolved.suffix == ".md" and anchor not in anchors_of(resolved):
                log.warning("%s: no heading with the anchor '#%s' in %s", where, anchor, relative)
            if repo_url:
                kind = "tree" if resolved.is_dir() else "blob"
                suffix = f"#{anchor}" if anchor else ""
                return f"[{text}]({repo_url}/{kind}/main/{relative}{suffix})"
            return f"{text} (`{relative}`)" if text.strip("`") != relative else f"`{relative}`"

        out.append(_LINK.sub(rewrite, line))
    return "".join(out)
