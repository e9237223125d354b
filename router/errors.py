"""The router's exception tree.

```
* RouterError
  x ConfigError        (startup only; names file, field and fix)
  x DataError          (a catalog or query file that cannot be read)
  x UpstreamError      (carries the upstream id)
    + UpstreamUnavailable / UpstreamTimeout / UpstreamProtocolError
  x ToolNotFound       (-> JSON-RPC invalid params)
  x EmbeddingError     (model missing or unloadable)
```
"""

from __future__ import annotations


class RouterError(Exception):
    """Base class of every error the router raises on purpose."""


class ConfigError(RouterError):
    """A configuration file or option is invalid."""


class DataError(RouterError):
    """A dataset file (catalog or queries) cannot be used."""


class EmbeddingError(RouterError):
    """The embedding model cannot be found or loaded."""


class ToolNotFound(RouterError):
    """A tool name resolves to no tool in the catalog."""

    def __init__(self, name: str, suggestions: tuple[str, ...] = ()) -> None:
        hint = f"; did you mean {', '.join(suggestions)}?" if suggestions else ""
        super().__init__(f"unknown tool {name!r}{hint}")
        self.name = name
        self.suggestions = suggestions


class UpstreamError(RouterError):
    """An upstream server failed; carries the upstream's name."""

    def __init__(self, upstream: str, message: str) -> None:
        super().__init__(f"upstream {upstream!r}: {message}")
        self.upstream = upstream


class UpstreamUnavailable(UpstreamError):
    """The upstream is not connected (starting, dead or being retried)."""


class UpstreamTimeout(UpstreamError):
    """The upstream did not answer within its deadline."""


class UpstreamProtocolError(UpstreamError):
    """The upstream answered with something that is not valid MCP."""
