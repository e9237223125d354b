"""The package's layers, as `docs/architecture.md` draws them, hold in the code.

Every import in `router/` is read with `ast` (top-level, inside functions and under
`TYPE_CHECKING` alike: a type-only import is still a dependency), and each module is mapped
to its layer by the table in `docs/architecture.md#layers`. A test fails naming the import
that runs upward, closes a cycle (between modules, or between the top-level packages), or
brings the MCP SDK outside the modules allowed to speak it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "router"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
SDK_PACKAGES = ("mcp", "mcp_types")
_LAYER_LINE = re.compile(r"^\s*(\d+)\s+([a-z-]+)\s+(router\S*(?:\s+router\S*)*)\s*$")
_SIBLINGS_LINE = re.compile(r"^\s*(router\S*)\s+(router\S*)\s*$")


@dataclass(frozen=True, slots=True)
class Import:
    module: str
    target: str
    line: int


@dataclass(frozen=True, slots=True)
class Layer:
    number: int
    name: str


def module_names(package: Path = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package."""
    names: dict[str, Path] = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def imports_of(module: str, path: Path, known: Mapping[str, Path]) -> Iterator[Import]:
    """Each import of `module` that reaches a module of the package (or the SDK, named as
    written), resolved to the most specific known module."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            targets = [f"{source}.{alias.name}" for alias in node.names] or [source]
            targets = [t if t in known else source for t in targets]
        for target in dict.fromkeys(targets):
            top = target.split(".")[0]
            if top in SDK_PACKAGES:
                yield Import(module, target, node.lineno)
            elif top == "router":
                while target not in known and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target != module:
                    yield Import(module, target, node.lineno)


def all_imports() -> list[Import]:
    known = module_names()
    return [found for name, path in known.items() for found in imports_of(name, path, known)]


def _layer_table(text: str) -> str:
    section = text.split("\n## Layers", 1)[1].split("\n## ", 1)[0]
    return section.split("```", 2)[1]


def documented_siblings(text: str) -> list[tuple[str, str]]:
    """The pairs of packages that never import each other, after the table's `siblings` line."""
    rest = _layer_table(text).split("\nsiblings", 1)[1]
    return [(m.group(1), m.group(2)) for m in map(_SIBLINGS_LINE.match, rest.splitlines()) if m]


def documented_layers(text: str) -> dict[str, Layer]:
    """Module prefix -> layer, from the fenced table under `## Layers`."""
    table = _layer_table(text)
    layers: dict[str, Layer] = {}
    for line in table.splitlines():
        match = _LAYER_LINE.match(line)
        if match:
            layer = Layer(int(match.group(1)), match.group(2))
            for prefix in match.group(3).split():
                layers[prefix] = layer
    return layers


def layer_of(module: str, layers: Mapping[str, Layer]) -> Layer | None:
    """The layer of the longest documented prefix of `module`."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        layer = layers.get(".".join(parts[:end]))
        if layer is not None:
            return layer
    return None


def upward_imports(found: list[Import], layers: Mapping[str, Layer]) -> list[str]:
    problems = []
    for edge in found:
        if edge.target.split(".")[0] != "router":
            continue
        source, target = layer_of(edge.module, layers), layer_of(edge.target, layers)
        assert source is not None and target is not None
        if target.number > source.number:
            problems.append(
                f"{edge.module} (line {edge.line}, layer {source.number} {source.name}) imports "
                f"{edge.target} (layer {target.number} {target.name})"
            )
    return problems


def cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for after in sorted(edges.get(node, ())):
            if after not in index:
                visit(after)
                low[node] = min(low[node], low[after])
            elif after in on_stack:
                low[node] = min(low[node], index[after])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def unit_of(module: str) -> str:
    """The top-level package (or module) a module belongs to: `router.server.http.app` ->
    `router.server`."""
    return ".".join(module.split(".")[:2])


def _router_edges(found: list[Import], unit: bool) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for edge in found:
        if edge.target.split(".")[0] != "router":
            continue
        source, target = (
            (unit_of(edge.module), unit_of(edge.target))
            if unit
            else (
                edge.module,
                edge.target,
            )
        )
        if source != target:
            edges.setdefault(source, set()).add(target)
    return edges


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


SDK_SPEAKERS = ("router.sdk", "router.server", "router.upstream")
"""The modules that may import the MCP SDK: the two edges and the seam they share."""


def sdk_outside_the_edges(found: list[Import]) -> list[str]:
    return [
        f"{e.module} (line {e.line}) imports {e.target}"
        for e in found
        if e.target.split(".")[0] in SDK_PACKAGES
        and not any(_within(e.module, speaker) for speaker in SDK_SPEAKERS)
    ]


@pytest.fixture(scope="module")
def found() -> list[Import]:
    return all_imports()


@pytest.fixture(scope="module")
def layers() -> dict[str, Layer]:
    return documented_layers(ARCHITECTURE.read_text(encoding="utf-8"))


def test_every_module_has_a_documented_layer(layers: dict[str, Layer]) -> None:
    missing = [m for m in module_names() if layer_of(m, layers) is None]
    assert not missing, f"modules in no layer of docs/architecture.md#layers: {missing}"


def test_no_module_imports_from_a_higher_layer(
    found: list[Import], layers: dict[str, Layer]
) -> None:
    problems = upward_imports(found, layers)
    assert not problems, "imports that run upward:\n" + "\n".join(problems)


def sibling_imports(found: list[Import], siblings: list[tuple[str, str]]) -> list[str]:
    return [
        f"{e.module} (line {e.line}) imports {e.target}"
        for one, other in siblings
        for e in found
        if (_within(e.module, one) and _within(e.target, other))
        or (_within(e.module, other) and _within(e.target, one))
    ]


def test_siblings_never_import_each_other(found: list[Import]) -> None:
    siblings = documented_siblings(ARCHITECTURE.read_text(encoding="utf-8"))
    assert siblings, "docs/architecture.md#layers names no siblings"
    problems = sibling_imports(found, siblings)
    assert not problems, "siblings that must not import each other:\n" + "\n".join(problems)


def test_no_modules_import_each_other_in_a_cycle(found: list[Import]) -> None:
    loops = cycles(_router_edges(found, unit=False))
    assert not loops, f"module import cycles: {loops}"


def test_no_packages_import_each_other_in_a_cycle(found: list[Import]) -> None:
    loops = cycles(_router_edges(found, unit=True))
    detail = [
        f"{e.module} (line {e.line}) imports {e.target}"
        for loop in loops
        for e in found
        if unit_of(e.module) in loop
        and unit_of(e.target) in loop
        and unit_of(e.module) != unit_of(e.target)
    ]
    assert not loops, f"package import cycles {loops}:\n" + "\n".join(detail)


def test_only_the_edges_import_the_sdk(found: list[Import]) -> None:
    outside = sdk_outside_the_edges(found)
    assert not outside, (
        "the SDK imported elsewhere than " + ", ".join(SDK_SPEAKERS) + ":\n" + ("\n".join(outside))
    )


def test_the_checks_see_a_violation(tmp_path: Path) -> None:
    """The walk itself: an upward import, a cycle and a stray SDK import are each found."""
    package = tmp_path / "router"
    (package / "low").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "low" / "__init__.py").write_text("")
    (package / "low" / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from router.high import b\n"
    )
    (package / "high.py").write_text("import mcp_types\nfrom router.low.a import x\n")
    known = module_names(package)
    edges = [e for name, path in known.items() for e in imports_of(name, path, known)]
    layers = {"router": Layer(0, "kernel"), "router.high": Layer(1, "top")}
    assert upward_imports(edges, layers) == [
        "router.low.a (line 3, layer 0 kernel) imports router.high (layer 1 top)"
    ]
    assert cycles(_router_edges(edges, unit=True)) == [["router.high", "router.low"]]
    assert sdk_outside_the_edges(edges) == ["router.high (line 1) imports mcp_types"]
    assert sibling_imports(edges, [("router.low", "router.high")]) == [
        "router.high (line 2) imports router.low.a",
        "router.low.a (line 3) imports router.high",
    ]
