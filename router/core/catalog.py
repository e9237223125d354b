"""The tool catalog: immutable `ToolRecord`s and the snapshot that indexes them."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from router.core.naming import NameClash, NameCollision, NameRules, Naming, assign_names

JsonObject = dict[str, Any]

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NAME_SEPARATORS = re.compile(r"[_\-.:/~\s]+")
# "(e.g., 'Asia/Tokyo', 'America/New_York')": example values say what a parameter accepts,
# not what the tool does, and they pull unrelated queries in ("what time is it in Tokyo"
# ranked convert_time above get_current_time because of one).
_EXAMPLES = re.compile(
    r"\s*\((?:e\.g\.?|eg\.|for example|for instance|such as|like|example:?)[^)]*\)"
    r"|,?\s*(?:e\.g\.|for example|for instance)[,:]?\s.*?(?=\.\s|\.$|;|$)",
    re.IGNORECASE,
)


def split_identifier(name: str) -> str:
    """`get_currentTime` -> `get current Time`: identifiers read as words."""
    words = _NAME_SEPARATORS.split(_CAMEL_BOUNDARY.sub(" ", name))
    return " ".join(word for word in words if word)


def strip_examples(text: str) -> str:
    """A parameter description without its example values."""
    return _EXAMPLES.sub("", text).strip()


def _parameter_lines(schema: Mapping[str, Any] | None) -> list[str]:
    """Parameter names (as words) and descriptions, top level and one level down."""
    if not schema:
        return []
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return []
    lines: list[str] = []
    for param, spec in properties.items():
        text = split_identifier(str(param))
        if isinstance(spec, Mapping):
            description = spec.get("description")
            if isinstance(description, str):
                description = strip_examples(description)
                if description:
                    text += ": " + description
            nested = spec.get("items") if spec.get("type") == "array" else spec
            if isinstance(nested, Mapping) and nested is not spec:
                lines.extend(_parameter_lines(nested))
        lines.append(text)
    return lines


MAX_SEARCH_TEXT = 4_000
"""Characters of a tool's text that ranking reads. Upstream text is untrusted: a description
stuffed with every keyword would otherwise match every query. The cap sits well above the
text of nearly every real tool in the public sets and pools (`../shared/data/`), so only
outliers are cut; the embedding model reads only its first `max_seq_length` tokens anyway."""


def build_search_text(
    server: str,
    name: str,
    description: str,
    schema: JsonObject | None,
    tags: tuple[str, ...] = (),
) -> str:
    """The text that is embedded and BM25-indexed for one tool, at most `MAX_SEARCH_TEXT`."""
    parts = [f"{split_identifier(name)} ({split_identifier(server)})", description.strip()]
    params = _parameter_lines(schema)
    if params:
        parts.append("Parameters: " + "; ".join(params))
    if tags:
        parts.append("Tags: " + ", ".join(tags))
    return "\n".join(part for part in parts if part)[:MAX_SEARCH_TEXT]


@dataclass(frozen=True, slots=True)
class ToolRecord:
    """One upstream tool as the router knows it.

    `fingerprint` hashes exactly what is embedded, so a changed description invalidates
    the cached vector and nothing else does.
    """

    server: str
    name: str
    qualified_name: str
    description: str
    input_schema: JsonObject = field(compare=False)
    annotations: JsonObject | None = field(default=None, compare=False)
    title: str | None = None
    server_description: str | None = None
    search_text: str = ""
    fingerprint: str = ""
    output_schema: JsonObject | None = field(default=None, compare=False)
    tags: tuple[str, ...] = ()
    shaping: Shaping | None = field(default=None, compare=False)
    """What the config's transform of this tool changed (`router.shaping`); None: the tool
    is as its upstream lists it."""
    ui: JsonObject | None = field(default=None, compare=False)
    """The upstream's own `_meta.ui` (MCP Apps, `router.core.apps`): its `ui://` resource,
    who may see the tool; pinned with the rest of the definition."""
    app_uri: str | None = field(default=None, compare=False)
    """The `ui://` URI hosts are shown for the tool's resource, when another upstream shares
    the upstream's own (`UiUris`); None: the upstream's own."""

    @property
    def shown_ui(self) -> JsonObject | None:
        """`_meta.ui` as a host sees it: the resource under the URI the router lists."""
        if self.ui is None or self.app_uri is None:
            return self.ui
        return {**self.ui, "resourceUri": self.app_uri}

    @property
    def called_as(self) -> str:
        """The tool's name at its upstream: what a call sends (`name` may be a rename)."""
        return self.shaping.upstream_name if self.shaping is not None else self.name

    @property
    def key(self) -> tuple[str, str]:
        """The upstream's own identity of the tool: a rename changes neither its pins nor
        what usage learnt of it."""
        return (self.server, self.called_as)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as an upstream or a dataset line describes it, before it gets its name."""

    server: str
    name: str
    description: str = ""
    input_schema: JsonObject | None = None
    annotations: JsonObject | None = None
    title: str | None = None
    server_description: str | None = None
    output_schema: JsonObject | None = None
    tags: tuple[str, ...] = ()
    shaping: Shaping | None = None
    ui: JsonObject | None = None
    """`_meta.ui` as the upstream gave it (`router.core.apps`)."""


@dataclass(frozen=True, slots=True)
class Shaping:
    """A tool as a config transform left it (`router.shaping.transforms`): what a call
    needs to reach the upstream's own tool, and that tool as the upstream defines it."""

    upstream_name: str
    original: ToolSpec
    """The upstream's own definition, untransformed: what tool pinning fingerprints, so a
    change under a transform is still held."""
    defaults: JsonObject = field(default_factory=dict)
    """Argument values a call gets when it leaves them out."""
    fixed: JsonObject = field(default_factory=dict)
    """Argument values every call gets, whatever it sends (not in the schema the model sees)."""


EMPTY_OBJECT_SCHEMA: JsonObject = {"type": "object", "properties": {}}


def fingerprint_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def make_records(
    specs: Iterable[ToolSpec], rules: NameRules | None = None
) -> tuple[tuple[ToolRecord, ...], Naming]:
    """Turn specs into records with unique names; report the collisions and clashes resolved."""
    spec_list = _dedupe(specs)
    naming = assign_names([(s.server, s.name) for s in spec_list], rules)
    records = []
    for spec, qualified in zip(spec_list, naming.names, strict=True):
        schema = spec.input_schema if isinstance(spec.input_schema, dict) else None
        text = build_search_text(spec.server, spec.name, spec.description, schema, spec.tags)
        records.append(
            ToolRecord(
                server=spec.server,
                name=spec.name,
                qualified_name=qualified,
                description=spec.description,
                input_schema=schema if schema is not None else dict(EMPTY_OBJECT_SCHEMA),
                annotations=spec.annotations,
                title=spec.title,
                server_description=spec.server_description,
                output_schema=spec.output_schema,
                search_text=text,
                fingerprint=fingerprint_text(text),
                tags=spec.tags,
                shaping=spec.shaping,
                ui=spec.ui,
            )
        )
    return tuple(records), naming


def _dedupe(specs: Iterable[ToolSpec]) -> list[ToolSpec]:
    """Keep the first definition of each (server, tool): an upstream lists a name once."""
    seen: dict[tuple[str, str], ToolSpec] = {}
    for spec in specs:
        upstream_name = spec.shaping.upstream_name if spec.shaping is not None else spec.name
        seen.setdefault((spec.server, upstream_name), spec)
    return list(seen.values())


class Catalog:
    """An immutable snapshot of every known tool, looked up by qualified name or key."""

    def __init__(
        self,
        records: tuple[ToolRecord, ...],
        collisions: Iterable[NameCollision] = (),
        clashes: Iterable[NameClash] = (),
    ) -> None:
        self.records = records
        self.collisions = tuple(collisions)
        self.clashes = tuple(clashes)
        """Unprefixed tools that lost their name to another tool (`router.naming`)."""
        self._by_qualified = {r.qualified_name: r for r in records}
        self._by_key = {r.key: r for r in records}
        self._position = {r.qualified_name: i for i, r in enumerate(records)}

    @classmethod
    def from_specs(cls, specs: Iterable[ToolSpec], rules: NameRules | None = None) -> Catalog:
        records, naming = make_records(specs, rules)
        return cls(records, naming.collisions, naming.clashes)

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Any:
        return iter(self.records)

    def get(self, qualified_name: str) -> ToolRecord | None:
        return self._by_qualified.get(qualified_name)

    def by_key(self, server: str, name: str) -> ToolRecord | None:
        return self._by_key.get((server, name))

    def position(self, qualified_name: str) -> int:
        return self._position[qualified_name]

    @property
    def servers(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.server for r in self.records))

    @property
    def fingerprint(self) -> str:
        """Changes whenever any tool's identity or embedded text changes."""
        joined = json.dumps([[r.qualified_name, r.fingerprint] for r in self.records])
        return fingerprint_text(joined)
