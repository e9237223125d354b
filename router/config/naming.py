"""The naming rules a configuration gives: which servers keep their tools' names unprefixed,
and which names the router keeps for its own meta-tools."""

from __future__ import annotations

from router.config.settings import RouterConfig
from router.core.meta_tools import CALL_TOOL, EXECUTE, READ_RESULT, SEARCH_TOOLS
from router.core.naming import NameRules

__all__ = ["name_rules"]


def name_rules(config: RouterConfig) -> NameRules:
    """How tools are named under `config`: servers with `"prefix": false` keep their tools'
    names, except the meta-tools' names wherever the router lists the meta-tools (every mode
    but pass-through)."""
    unprefixed = frozenset(n for n, s in config.enabled_servers().items() if not s.prefix)
    meta = frozenset((SEARCH_TOOLS, CALL_TOOL, READ_RESULT))  # read_result: called, not listed
    modes = config.modes  # the router's and its endpoints' (`router.endpoints`)
    if "code" in modes:
        meta |= {EXECUTE}
    reserved = frozenset() if modes == {"all"} else meta
    return NameRules(unprefixed=unprefixed, reserved=reserved)
