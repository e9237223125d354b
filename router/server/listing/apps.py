"""The extensions the router serves to its hosts (SEP-2133, `capabilities.extensions`).

Only what the router carries end to end is advertised: MCP Apps (`router.core.apps`), whose
tools, `ui://` resources and per-request support reach the upstreams. An upstream's other
extensions are not advertised to the host: the router would not carry what they add.
"""

from __future__ import annotations

from typing import Any

from router.core.apps import EXTENSION_ID

SERVED: dict[str, dict[str, Any]] = {EXTENSION_ID: {}}
"""Advertised under the router's `capabilities.extensions`, identifier -> settings."""
