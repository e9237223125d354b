"""Splitting a multi-step request into its parts, so each part can surface its own tool.

"Find this week's trending papers, then write them into a PDF report" needs a search tool
and a PDF tool; one embedding of the whole sentence tends to land near only one of them.
"""

from __future__ import annotations

import re

_STEP_BOUNDARY = re.compile(
    r"(?:[.;!?]\s+(?:and\s+)?(?:then\s+)?)"
    r"|(?:,?\s+(?:and\s+)?then\s+)"
    r"|(?:,?\s+(?:after that|afterwards|finally|next|followed by|subsequently)[,\s]+)"
    r"|(?:,\s+and\s+)"
    r"|(?:\s+and\s+(?:also\s+)?(?=(?:create|generate|send|save|write|upload|post|convert|"
    r"export|download|search|find|get|fetch|retrieve|list|update|delete|add|analy[sz]e|"
    r"summari[sz]e|translate|schedule|check|run|make|notify|email|share|store|book|compare)\b))",
    re.IGNORECASE,
)
_LEADING_CONNECTIVE = re.compile(
    r"^(?:(?:and|also|then)\b,?\s*"
    # an ordinal or "next" only with its comma: "Next week I fly" keeps its "Next"
    r"|(?:first(?:ly)?|second(?:ly)?|third(?:ly)?|next|finally|lastly|after that|afterwards|"
    r"subsequently),\s*)+",
    re.IGNORECASE,
)
"""The words that open a step ("Then, open the issue"; "First, list ..."): they say where
the step stands, not what it needs, so a clause is ranked without them."""
_MIN_WORDS = 3


def split_steps(query: str, max_parts: int) -> list[str]:
    """The step clauses of `query`, at most `max_parts` (the last one takes the rest; the
    ranking's `step_parts`); a single-step query gives an empty list."""
    pieces = [_LEADING_CONNECTIVE.sub("", p.strip(" ,.;")) for p in _STEP_BOUNDARY.split(query)]
    parts: list[str] = []
    for piece in pieces:
        if not piece:
            continue
        if parts and len(piece.split()) < _MIN_WORDS:
            parts[-1] = f"{parts[-1]} {piece}"
        else:
            parts.append(piece)
    if len(parts) < 2:
        return []
    if len(parts) > max_parts:
        parts = [*parts[: max_parts - 1], " ".join(parts[max_parts - 1 :])]
    return parts
