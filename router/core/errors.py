"""The router's exception tree.

```
* RouterError
  x ConfigError          (startup only; names file, field and fix)
  x DataError            (a catalog or query file that cannot be read)
  x UpstreamError        (carries the upstream id)
    + UpstreamUnavailable / UpstreamTimeout / UpstreamProtocolError
    + SignInNeeded       (OAuth-protected, no usable credentials; says how to sign in)
  x InvalidParams        (a request's parameters name nothing or break a schema; carries data)
    + ToolNotFound       (with suggestions)
    + ArgumentsInvalid   (with every problem; raised by router.server.calls.validation)
    + ToolDenied         (router.policy denies the tool; names the rule)
    + ToolHeld           (tool pinning holds a changed or new tool; names the approve command)
    + CatalogChanged     (a `/v1/tools` cursor of an older catalog generation)
  x StillStarting        (nothing indexed yet to answer from)
  x OverQuotaError       (a request other than a tool call over the caller's quota; carries data)
  x HttpRefusal          (the HTTP front refuses a request before reading it; carries a status)
    + UnparsableRequest  (the body is not JSON)
  x ServeError           (the HTTP front cannot take its address: in use, not this machine's)
  x EmbeddingError       (model missing or unloadable)
  x StoreError           (the shared store is unreachable, or its schema is not this router's)
  x AuditUnavailable     (the audit trail cannot be written; raised by router.audit)
```

Foreign exceptions are mapped to these once, where they enter: the SDK's and the
transports' in `router.upstream`, the SDK transports' plain-text refusals in
`router.server.http.errors`. `router.server.lifecycle.errors` is the one place these become JSON-RPC
errors, `isError` tool results and HTTP statuses, for every surface, by type alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_MAX_REPORTED_PROBLEMS = 5


class RouterError(Exception):
    """Base class of every error the router raises on purpose."""


class ConfigError(RouterError):
    """A configuration file or option is invalid."""


class DataError(RouterError):
    """A dataset file (catalog or queries) cannot be used."""


class EmbeddingError(RouterError):
    """The embedding model cannot be found or loaded."""


class StoreError(RouterError):
    """The shared store (`router.store`) cannot be reached or used."""


class AuditUnavailable(RouterError):
    """The audit trail cannot be written; with `router.audit.required` the call is refused.
    Here, not in `router.audit`, so a router without a trail never imports that package."""


class InvalidParams(RouterError):
    """A request's parameters are wrong: a missing field, or a name that resolves to nothing.

    `data` travels to the client as the JSON-RPC error's `data`.
    """

    def __init__(self, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.data = data


class ToolNotFound(InvalidParams):
    """A tool name resolves to no tool in the catalog. `starting` and `down`: upstreams not
    listed yet (still starting, or down before their first listing) whose tools the caller
    may see: the name may be one of theirs, so the message says so, not only "unknown"."""

    def __init__(
        self,
        name: str,
        suggestions: tuple[str, ...] = (),
        *,
        starting: tuple[str, ...] = (),
        down: tuple[str, ...] = (),
    ) -> None:
        unlisted = []
        if starting:
            unlisted.append(f"still starting: {', '.join(starting)} (call again in a moment)")
        if down:
            unlisted.append(f"down before listing its tools: {', '.join(down)}")
        why = f" so far; not listed yet, {'; '.join(unlisted)}" if unlisted else ""
        hint = f"; did you mean {', '.join(suggestions)}?" if suggestions else ""
        data: dict[str, Any] = {"suggestions": list(suggestions)} if suggestions else {}
        if starting:
            data["starting"] = list(starting)
        if down:
            data["down"] = list(down)
        super().__init__(f"unknown tool {name!r}{why}{hint}", data or None)
        self.name = name
        self.suggestions = suggestions
        self.starting = starting
        self.down = down


class ArgumentsInvalid(InvalidParams):
    """The arguments break the schema; the message names every offending field, and `data`
    carries the tool's `inputSchema` where one is given (`router.server.calls.validation`
    gives it when it is small enough for an error)."""

    def __init__(
        self, tool: str, problems: list[str], schema: Mapping[str, Any] | None = None
    ) -> None:
        shown = problems[:_MAX_REPORTED_PROBLEMS]
        more = f" (and {len(problems) - len(shown)} more)" if len(problems) > len(shown) else ""
        message = f"invalid arguments for {tool}: " + "; ".join(shown) + more
        data: dict[str, Any] = {"problems": problems}
        if schema is not None:  # the model that guessed at the arguments can read them here
            message += "; call again with arguments that match the tool's inputSchema (in data)"
            data["inputSchema"] = dict(schema)
        super().__init__(message, data)
        self.problems = problems


class ToolDenied(InvalidParams):
    """`router.policy` denies the tool: it is never listed, searched or called."""

    def __init__(self, name: str, rule: str) -> None:
        super().__init__(
            f"tool {name!r} is denied by {rule}; change router.policy in the config to allow it",
            {"tool": name, "policy": rule},
        )


class ToolHeld(InvalidParams):
    """Tool pinning (`router.pinning`) holds the tool: its definition changed since it was
    approved (`reason` "changed"), it is a new tool that `strict` holds ("new"), or the pins
    cannot be read, so its approval is not confirmed ("unverified"). `operators`: the caller
    may not approve it, so the error names who may."""

    def __init__(
        self,
        name: str,
        server: str,
        tool: str,
        reason: str,
        approve: str,
        review: str,
        *,
        operators: bool = False,
    ) -> None:
        why = {
            "changed": "changed since it was approved (its description, input schema or "
            "annotations)",
            "unverified": "cannot be checked against its approved definition: the tool pins "
            "cannot be read (see /healthz and the router's log)",
        }.get(reason, "is new on a server seen before, and router.pinning 'strict' holds new tools")
        if reason == "unverified":
            how = "it is held until the pins read again"
        elif operators:
            how = (
                "it is held until an operator (router.operators) approves it in a session, or "
                f"a person with the router's config runs `{approve}` (the change: `{review}`)"
            )
        else:
            how = (
                f"it is held until approved: see the change with `{review}`, then approve it "
                f"with `{approve}`"
            )
        super().__init__(
            f"tool {name!r} {why}; {how}",
            {"tool": name, "server": server, "pinning": reason, "approve": approve},
        )
        self.name = name
        self.server = server
        self.tool = tool
        self.reason = reason


class CatalogChanged(InvalidParams):
    """A `GET /v1/tools` cursor was made for another catalog generation: the pages after it
    would skip or repeat tools, so the listing starts again."""

    def __init__(self, cursor_generation: int, generation: int) -> None:
        super().__init__(
            f"the catalog changed since this cursor was made (generation {cursor_generation}, "
            f"now {generation}): list again from the start, without a cursor",
            {"cursor_generation": cursor_generation, "generation": generation},
        )
        self.generation = generation


class StillStarting(RouterError):
    """Nothing is indexed yet: the upstreams are still connecting."""


class OverQuotaError(RouterError):
    """A resource read, prompt get, completion or subscription over the caller's quota
    (`router.quotas`): the text and `data` a tool call over it gets as its `isError`
    result (`router.server.calls.passage`)."""

    def __init__(self, message: str, data: dict[str, Any]) -> None:
        super().__init__(message)
        self.data = data


class HttpRefusal(RouterError):
    """The HTTP front refuses a request (Host, Origin, token, body size, wrong method)."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.headers = headers


class UnparsableRequest(HttpRefusal):
    """The request's body is not JSON at all (-32700 on the MCP endpoints)."""


class ServeError(RouterError):
    """The HTTP front cannot start serving: its host and port cannot be bound."""


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


class SignInNeeded(UpstreamError):
    """The upstream is OAuth-protected and has no usable credentials: a person must sign in
    (`hint` says how)."""

    def __init__(self, upstream: str, hint: str) -> None:
        super().__init__(upstream, f"sign-in needed: {hint}")
        self.hint = hint
