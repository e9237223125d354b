"""Tool transforms: each server entry's `tools` section applied to the tools its upstream
lists (`router/config/shaping.py` has the settings).

The index reads tools through `Transforms.apply`, so search, listings, validation and code
mode all see the transformed tool; the call gets the fixed and default values back
(`router.server.calls.stages.shape`) and goes out under the upstream's own name. Each
transformed `ToolSpec` keeps the upstream's own definition (`Shaping.original`): tool pinning
fingerprints that, so a change the upstream makes under a transform is still held.

For one tool, the entries whose key matches it apply in the file's order, globs before its
own name; a later entry's value of a field wins, `tags` and `description_append` add up.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from router.config import RouterConfig
from router.config.shaping import ToolTransform, is_glob
from router.core.catalog import JsonObject, Shaping, ToolSpec

__all__ = ["Transforms", "merged"]


@dataclass(frozen=True, slots=True)
class _Merged:
    """Every entry matching one tool, folded into one."""

    name: str | None = None
    description: str | None = None
    appended: tuple[str, ...] = ()
    hide: bool = False
    defaults: JsonObject = field(default_factory=dict)
    fixed: JsonObject = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    annotations: JsonObject = field(default_factory=dict)


def merged(entries: Sequence[ToolTransform]) -> _Merged:
    """Fold the entries that match one tool, in order: the fields each sets, over the last."""
    result = _Merged()
    for entry in entries:
        given = entry.model_fields_set
        result = dataclasses.replace(
            result,
            name=entry.name if "name" in given else result.name,
            description=entry.description if "description" in given else result.description,
            appended=(*result.appended, entry.description_append)
            if entry.description_append
            else result.appended,
            hide=entry.hide if "hide" in given else result.hide,
            defaults={**result.defaults, **entry.defaults},
            fixed={**result.fixed, **entry.fixed},
            tags=tuple(dict.fromkeys((*result.tags, *entry.tags))),
            annotations={**result.annotations, **entry.overrides()},
        )
    return result


class Transforms:
    """The transforms of every server entry, applied to the tools the index is given."""

    def __init__(self, by_server: Mapping[str, Sequence[tuple[str, ToolTransform]]]) -> None:
        self._by_server = {name: tuple(entries) for name, entries in by_server.items() if entries}

    @classmethod
    def from_config(cls, config: RouterConfig) -> Transforms:
        return cls({name: tuple(entry.tools.items()) for name, entry in config.servers.items()})

    def _matching(self, server: str, tool: str) -> list[ToolTransform]:
        entries = self._by_server.get(server, ())
        globs = [entry for key, entry in entries if is_glob(key) and fnmatchcase(tool, key)]
        own = [entry for key, entry in entries if not is_glob(key) and key == tool]
        return globs + own

    def apply(self, specs: Iterable[ToolSpec]) -> list[ToolSpec]:
        """`specs` as the config shapes them: hidden tools left out, the rest transformed."""
        specs = list(specs)
        if not self._by_server:
            return specs
        taken = _names_by_server(specs)
        shaped: list[ToolSpec] = []
        for spec in specs:
            entries = self._matching(spec.server, spec.name)
            if not entries:
                shaped.append(spec)
                continue
            change = merged(entries)
            if change.hide:
                continue
            name = _free_name(change.name, spec, taken[spec.server])
            shaped.append(_shaped(spec, change, name))
        return shaped

    def problems(self, tools: Mapping[str, Iterable[ToolSpec]]) -> list[str]:
        """What the transforms name that the listed tools lack (`tools`: each server's
        listing, untransformed): warnings for `inspect` and the log, never errors, since an
        upstream may list the tool again later."""
        found: list[str] = []
        for server, entries in self._by_server.items():
            if server not in tools:
                continue
            listed = {spec.name: spec for spec in tools[server]}
            for key, entry in entries:
                hits = [n for n in listed if fnmatchcase(n, key)] if is_glob(key) else [key]
                if not is_glob(key) and key not in listed:
                    found.append(f"{server}: `tools.{key}` names a tool the upstream does not list")
                    continue
                if not hits:
                    found.append(f"{server}: `tools.{key}` matches none of the upstream's tools")
                    continue
                if entry.name is not None and entry.name != key and entry.name in listed:
                    found.append(
                        f"{server}: `tools.{key}.name` is {entry.name!r}, a name the upstream "
                        "already lists; the tool keeps its own name"
                    )
                for name in hits:
                    lacking = _missing_parameters(listed[name], entry)
                    if lacking:
                        found.append(
                            f"{server}: `tools.{key}` sets {', '.join(lacking)}, which "
                            f"{name}'s schema does not have (sent on every call all the same)"
                        )
        return found


def _names_by_server(specs: Sequence[ToolSpec]) -> dict[str, set[str]]:
    names: dict[str, set[str]] = {}
    for spec in specs:
        names.setdefault(spec.server, set()).add(spec.name)
    return names


def _free_name(wanted: str | None, spec: ToolSpec, taken: set[str]) -> str:
    """The rename, unless another tool of the server already has that name (`problems`
    says so): a rename never hides another tool."""
    if wanted is None or wanted == spec.name or wanted in taken:
        return spec.name
    taken.add(wanted)
    return wanted


def _properties(schema: JsonObject | None) -> Mapping[str, Any]:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    return properties if isinstance(properties, Mapping) else {}


def _missing_parameters(spec: ToolSpec, entry: ToolTransform) -> list[str]:
    properties = _properties(spec.input_schema)
    return sorted(n for n in (*entry.defaults, *entry.fixed) if n not in properties)


def _shaped(spec: ToolSpec, change: _Merged, name: str) -> ToolSpec:
    description = change.description if change.description is not None else spec.description
    for more in change.appended:
        description = f"{description.rstrip()}\n\n{more}" if description.strip() else more
    annotations = {**(spec.annotations or {}), **change.annotations} or None
    title = spec.title
    if "title" in change.annotations:
        title = change.annotations["title"]
    return dataclasses.replace(
        spec,
        name=name,
        description=description,
        input_schema=_schema(spec.input_schema, change.defaults, change.fixed),
        annotations=annotations,
        title=title,
        tags=tuple(dict.fromkeys((*spec.tags, *change.tags))),
        shaping=Shaping(spec.name, spec, dict(change.defaults), dict(change.fixed)),
    )


def _schema(
    schema: JsonObject | None, defaults: JsonObject, fixed: JsonObject
) -> JsonObject | None:
    """The input schema the model sees: fixed parameters gone, defaults shown as `default`
    and no longer required."""
    if schema is None or not (defaults or fixed):
        return schema
    shaped = copy.deepcopy(schema)
    properties = shaped.get("properties")
    if isinstance(properties, dict):
        for name in fixed:
            properties.pop(name, None)
        for name, value in defaults.items():
            spec = properties.get(name)
            if isinstance(spec, dict):
                spec["default"] = copy.deepcopy(value)
    required = shaped.get("required")
    if isinstance(required, list):
        kept = [n for n in required if n not in fixed and n not in defaults]
        if kept:
            shaped["required"] = kept
        else:
            del shaped["required"]
    return shaped
