"""docs/tasks.md against a running router: its config example means what the page says, its
bounds table gives the defaults the config has, and its wire examples (fenced `json` blocks
tagged `example=…`) have the keys a live task answers with, through a real front and the
`gated` upstream. Values that vary (ids, times) are not compared; `"…"` stands for any value,
as in tests/server/http/test_surface_docs.py, whose comparison this reuses."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from router.config import RouterConfig
from router.config.servers import TaskSettings
from router.server.tasks.modes import TaskModes
from tests.server.http.test_surface_docs import DOCS, blocks, same_shape
from tests.server.tasks.test_tasks import front
from tests.support.identity_provider import IdentityProvider, module_provider

pytestmark = pytest.mark.processes
provider = module_provider
PAGE = "tasks.md"


def documented() -> dict[str, Any]:
    """The page's tagged examples, by tag; every `json` block must parse."""
    found = {}
    for block in blocks(PAGE):
        if block.language == "json":
            parsed = json.loads(block.text)
            if block.info.startswith("example="):
                found[block.info.removeprefix("example=")] = parsed
    return found


def _without_meta(answer: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in answer.items() if key != "_meta"}


def test_the_config_example_gives_the_modes_the_page_says() -> None:
    config = RouterConfig.model_validate(documented()["config"])
    modes = TaskModes.from_config(config)
    assert modes.mode_of("ci", "build") == "always"  # the server's
    assert modes.mode_of("ci", "status_of_build") == "never"  # a glob of its tools
    assert config.router.tasks.mode == "auto" and config.router.tasks.after_ms == 2000


def test_the_bounds_table_gives_the_defaults() -> None:
    text = (DOCS / PAGE).read_text("utf-8")
    rows = re.findall(r"^\| `router\.tasks\.(\w+)` \| ([^|]+) \|", text, re.MULTILINE)
    assert len(rows) == 5
    defaults = TaskSettings()
    for key, shown in rows:
        number, _, unit = shown.strip().partition(" ")
        value = int(number) << (20 if unit == "MiB" else 0)
        assert getattr(defaults, key) == value, key


async def test_the_wire_examples_have_the_keys_of_a_live_task(
    provider: IdentityProvider, tmp_path: Path
) -> None:
    examples = documented()
    async with front(provider, tmp_path) as hosts:
        alice = hosts["alice"]
        with anyio.fail_after(60):
            created = await alice.call("gated__job", {"key": "doc"})
            problems = list(same_shape(examples["created"], _without_meta(created)))
            assert not problems, problems
            async with alice.listen({"taskIds": [created["taskId"]]}) as stream:
                await stream.next()  # the acknowledgement
                await alice.call("gated__release", {"key": "doc"})
                told = await stream.next()
            problems = list(same_shape(examples["notification"], told))
            assert not problems, problems
            completed = await alice.until(created["taskId"], "completed")
            problems = list(same_shape(examples["completed"], _without_meta(completed)))
            assert not problems, problems
