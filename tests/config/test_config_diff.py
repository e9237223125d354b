"""What a config applied while serving changes (`router.config.diff`), and the start setting
of each server (`RouterConfig.start_for`), on parsed configs: no server starts."""

from __future__ import annotations

from typing import Any

import pytest

from router.config import parse_config
from router.config.diff import LIVE_SETTINGS, config_diff, upstream_identity
from router.core.errors import ConfigError

TIME = {"command": "mcp-server-time"}
GIT = {"command": "mcp-server-git", "args": ["--repository", "."]}


def cfg(servers: dict[str, dict[str, Any]], **router: Any) -> Any:
    return parse_config({"mcpServers": servers, "router": router})


def test_an_unchanged_file_changes_nothing() -> None:
    assert config_diff(cfg({"time": TIME}), cfg({"time": TIME})).empty


def test_servers_added_removed_and_changed_are_told_apart() -> None:
    old = cfg({"time": TIME, "git": GIT, "gone": TIME})
    new = cfg({"time": TIME, "git": {**GIT, "env": {"GIT_DIR": ".git"}}, "fresh": TIME})
    diff = config_diff(old, new)
    assert (diff.added, diff.removed, diff.restarted, diff.retimed) == (
        ("fresh",),
        ("gone",),
        ("git",),
        (),
    )
    assert diff.summary() == "added fresh; removed gone; restarted git"


def test_a_change_of_timeouts_only_retimes_the_upstream() -> None:
    old = cfg({"time": TIME})
    new = cfg({"time": {**TIME, "timeouts": {"call": 5, "idle": 30}}})
    diff = config_diff(old, new)
    assert (diff.restarted, diff.retimed) == ((), ("time",))
    assert new.timeouts_for("time").idle == 30


def test_naming_limits_and_policy_entry_fields_need_no_restart() -> None:
    old = cfg({"time": TIME})
    new = cfg({"time": {**TIME, "prefix": False, "result_tokens": 100}})
    diff = config_diff(old, new)
    assert diff.restarted == () and diff.entries and not diff.empty
    assert upstream_identity(old, "time") == upstream_identity(new, "time")


def test_disabling_a_server_removes_it_and_enabling_it_adds_it() -> None:
    on, off = cfg({"time": TIME, "git": GIT}), cfg({"time": TIME, "git": GIT}, disabled=["git"])
    assert config_diff(on, off).removed == ("git",)
    assert config_diff(off, on).added == ("git",)
    assert config_diff(on, off).settings == ("disabled",)


def test_router_settings_are_live_or_named_as_needing_a_restart() -> None:
    old = cfg({"time": TIME})
    new = cfg({"time": TIME}, k=3, pin=["time/*"], mode="all", model="other-model")
    diff = config_diff(old, new)
    assert set(diff.settings) == {"k", "pin"} <= LIVE_SETTINGS
    assert set(diff.need_restart) == {"mode", "model"}


def test_only_the_result_limit_of_the_limits_is_live() -> None:
    old = cfg({"time": TIME})
    new = cfg({"time": TIME}, limits={"result_tokens": 100, "keep_seconds": 5})
    diff = config_diff(old, new)
    assert (diff.settings, diff.need_restart) == (("limits",), ("limits.keep_seconds",))


def test_a_start_setting_change_restarts_the_servers_it_applies_to() -> None:
    old = cfg({"time": TIME, "git": {**GIT, "start": "eager"}})
    new = cfg({"time": TIME, "git": {**GIT, "start": "eager"}}, start="lazy")
    diff = config_diff(old, new)
    assert diff.restarted == ("time",)  # git's own setting wins
    assert (new.start_for("time"), new.start_for("git")) == ("lazy", "eager")


def test_start_is_auto_by_default_and_checked() -> None:
    assert cfg({"time": TIME}).start_for("time") == "auto"
    with pytest.raises(ConfigError, match=r"mcpServers\.time\.start"):
        cfg({"time": {**TIME, "start": "later"}})
    with pytest.raises(ConfigError, match=r"router\.reload"):
        cfg({"time": TIME}, reload="sometimes")
