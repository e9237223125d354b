"""docs/configuration.md names every key the config models accept, and its reference table is
the one the models give (`python -m router.cli.config_reference` writes it again)."""

from __future__ import annotations

import typing
from pathlib import Path

from pydantic import BaseModel, Field

from router.cli import config_reference as reference
from router.config.settings import RouterConfig

PAGE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def _models(annotation: object) -> list[type[BaseModel]]:
    """The models an annotation holds, through Annotated, unions, lists and dict values."""
    args = typing.get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if typing.get_origin(annotation) is dict:
        args = args[1:]
    return [model for arg in args for model in _models(arg)]


def field_names(model: type[BaseModel], seen: set[type[BaseModel]] | None = None) -> set[str]:
    """Every key name any model under `model` accepts (aliases as written in a file)."""
    seen = set() if seen is None else seen
    seen.add(model)
    names: set[str] = set()
    for name, field in model.model_fields.items():
        if field.exclude:
            continue
        alias = field.validation_alias
        choices = getattr(alias, "choices", None)
        if choices:
            names.add(str(choices[0]))
        else:
            names.add(alias if isinstance(alias, str) else name)
        for inner in _models(field.annotation):
            if inner not in seen:
                names |= field_names(inner, seen)
    return names


def missing_keys(model: type[BaseModel], page: str) -> list[str]:
    """The key names of `model` that no key path written on the page ends in."""
    written = {part.strip("`").rsplit(".", 1)[-1] for part in page.split() if "`" in part}
    return sorted(field_names(model) - written)


def test_every_key_the_models_accept_is_on_the_page() -> None:
    assert missing_keys(RouterConfig, PAGE.read_text(encoding="utf-8")) == []


def test_every_key_path_is_written_whole() -> None:
    text = PAGE.read_text(encoding="utf-8")
    paths = [key.path for key in reference.config_keys()]
    assert {"router.policy.hold_flagged", "mcpServers", "router.store.exact_max_tools"} <= set(
        paths
    )
    assert [path for path in paths if f"`{path}`" not in text] == []


def test_the_reference_is_the_one_the_models_give() -> None:
    text = PAGE.read_text(encoding="utf-8")
    section = text.split(reference.START, 1)[1].split(reference.END, 1)[0]
    assert section.strip() == reference.markdown().strip(), (
        "docs/configuration.md is behind the config models: python -m router.cli.config_reference"
    )


class _Inner(BaseModel):
    depth: int = 0
    forgotten: bool = Field(default=False)


class _Outer(BaseModel):
    named: dict[str, _Inner] = Field(default_factory=dict)


def test_the_check_sees_a_key_the_page_leaves_out() -> None:
    page = "| `x.named` | object |\n| `x.named.NAME.depth` | integer |"
    assert missing_keys(_Outer, page) == ["forgotten"]
