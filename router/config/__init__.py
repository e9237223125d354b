"""The configuration file: Claude Desktop's `mcpServers` shape plus a `router` section.

A Claude Desktop or Cursor file loads as it is; per-upstream router settings (`protocol`,
`timeouts`, `include`, `exclude`, `disabled`) may be added to any server entry, and keys
that other hosts put there (`autoApprove`, `type`, ...) are tolerated; one that looks like
a misspelled router key (`comand`, `exlude`) is an error naming the key meant. Every error
is a `ConfigError` naming the file, the field path and the fix. Relative paths in `cwd`,
`cache_dir` and `command` (one with a `/`, such as `../venv/bin/server`) are relative to the
config file; a bare command name is looked up on PATH.

```json
{"mcpServers": {
   "time": {"command": "mcp-server-time"},
   "docs": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}},
 "router": {"k": 5, "pin": ["time/*"], "timeouts": {"connect": 20, "call": 60}}}
```

The package, by concept: `defaults` (the built-in DEFAULT_* values), `fields` (field types
and `${VAR}` expansion), `servers` (the `mcpServers` entries), `settings` (the `router`
section and the whole file), `loading` (`load_config`, `parse_config`), `messages` (errors
that name file, field and fix; did-you-mean), `naming` (the naming rules a config gives) and
`code` (code mode's limits).
Every public name is importable from `router.config` itself.
"""

from __future__ import annotations

from router.config.code import CodeSettings
from router.config.defaults import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_HTTP_PORT,
    DEFAULT_IDLE_STOP,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_PING_INTERVAL,
    DEFAULT_RESULT_TOKENS,
)
from router.config.loading import load_config, parse_config
from router.config.naming import name_rules
from router.config.servers import (
    EffectiveTimeouts,
    RemoteServer,
    ServerConfig,
    Start,
    StdioServer,
    Timeouts,
)
from router.config.settings import (
    HttpSettings,
    Limits,
    Policy,
    RouterConfig,
    RouterSettings,
    StoreSettings,
)

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_HTTP_PORT",
    "DEFAULT_IDLE_STOP",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_PING_INTERVAL",
    "DEFAULT_RESULT_TOKENS",
    "CodeSettings",
    "EffectiveTimeouts",
    "HttpSettings",
    "Limits",
    "Policy",
    "RemoteServer",
    "RouterConfig",
    "RouterSettings",
    "ServerConfig",
    "Start",
    "StdioServer",
    "StoreSettings",
    "Timeouts",
    "load_config",
    "name_rules",
    "parse_config",
]
