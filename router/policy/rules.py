"""Which tools may be called, and which ask the user first: `router.policy` and the servers'
`confirm_destructive`.

Patterns are the `server/tool` and qualified-name globs of `pin` (`router.core.tool_patterns`).
The rules, first match wins:
1. a `deny` pattern: never listed, searched or called;
2. a non-empty `allow` that no pattern of matches: denied likewise;
3. a `confirm` pattern: the user is asked before each call;
4. a server with `confirm_destructive: true` and a tool annotated `destructiveHint: true`:
   asked likewise (an unannotated tool is not: list it under `confirm` to cover it);
5. anything else runs.
Each ruling names the rule that made it, so refusals can say which setting to change.

A server's other surfaces (resources, templates, prompts, completions, subscriptions) follow
the same patterns (`permits_server`): a `deny` that covers every tool of the server hides
them, and so does an `allow` none of whose patterns names the server.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

from router.config import RouterConfig
from router.core.catalog import ToolRecord
from router.core.tool_patterns import covers_server, matches, names_server
from router.policy.injection import flagged_rules


class Verdict(Enum):
    ALLOW = "allow"
    DENY = "deny"
    CONFIRM = "confirm"


@dataclass(frozen=True, slots=True)
class Ruling:
    verdict: Verdict
    rule: str = ""
    """The setting that decided, as a user finds it in the config file."""


ALLOWED = Ruling(Verdict.ALLOW)
_STRICTNESS = {Verdict.ALLOW: 0, Verdict.CONFIRM: 1, Verdict.DENY: 2}


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    confirm: tuple[str, ...] = ()
    confirm_destructive: frozenset[str] = frozenset()
    """Servers whose tools annotated `destructiveHint: true` ask first."""
    hold_flagged: bool = False
    """Deny every tool whose text reads like instructions to the model
    (`router.policy.injection`)."""
    where: str = "router.policy"
    """Where these rules are in the config file, for the rulings' names."""
    narrower: ToolPolicy | None = None
    """More rules that also apply (an endpoint's, `router.endpoints`): the stricter ruling
    of the two wins, deny over confirm over allow."""

    @classmethod
    def from_config(cls, config: RouterConfig) -> ToolPolicy:
        policy = config.router.policy
        return cls(
            allow=tuple(policy.allow),
            deny=tuple(policy.deny),
            confirm=tuple(policy.confirm),
            hold_flagged=policy.hold_flagged,
            confirm_destructive=frozenset(
                name for name, server in config.servers.items() if server.confirm_destructive
            ),
        )

    @property
    def restricts(self) -> bool:
        """Whether any tool can be denied (else nothing needs filtering)."""
        own = bool(self.allow or self.deny or self.hold_flagged)
        return own or (self.narrower is not None and self.narrower.restricts)

    def narrowed(self, other: ToolPolicy) -> ToolPolicy:
        """These rules with `other`'s applying too (the stricter ruling wins)."""
        inner = other if self.narrower is None else self.narrower.narrowed(other)
        return replace(self, narrower=inner)

    def rule_for(self, record: ToolRecord) -> Ruling:
        own = self._own_rule(record)
        if self.narrower is None or own.verdict is Verdict.DENY:
            return own
        other = self.narrower.rule_for(record)
        return other if _STRICTNESS[other.verdict] > _STRICTNESS[own.verdict] else own

    def _own_rule(self, record: ToolRecord) -> Ruling:
        where = self.where
        for pattern in self.deny:
            if matches(record, pattern):
                return Ruling(Verdict.DENY, f"{where}.deny {pattern!r}")
        if self.allow and not any(matches(record, pattern) for pattern in self.allow):
            return Ruling(Verdict.DENY, f"{where}.allow (no pattern names it)")
        if self.hold_flagged:
            rules = flagged_rules(record)
            if rules:
                return Ruling(
                    Verdict.DENY,
                    f"{where}.hold_flagged (its text reads like instructions to the "
                    f"model: {', '.join(rules)})",
                )
        for pattern in self.confirm:
            if matches(record, pattern):
                return Ruling(Verdict.CONFIRM, f"{where}.confirm {pattern!r}")
        if record.server in self.confirm_destructive and _destructive(record):
            return Ruling(
                Verdict.CONFIRM,
                f"confirm_destructive of server {record.server!r} (the tool is annotated "
                "destructiveHint: true)",
            )
        return ALLOWED

    def denies(self, record: ToolRecord) -> bool:
        return self.rule_for(record).verdict is Verdict.DENY

    def permits_server(self, server: str) -> bool:
        """Whether these rules leave the server's resources, templates, prompts and
        completions open: no `deny` pattern covers every tool it could list, and a
        non-empty `allow` has a pattern that names the server (`covers_server`,
        `names_server`). `confirm` and `hold_flagged` rule on tools only."""
        if any(covers_server(pattern, server) for pattern in self.deny):
            return False
        if self.allow and not any(names_server(pattern, server) for pattern in self.allow):
            return False
        return self.narrower is None or self.narrower.permits_server(server)


def _destructive(record: ToolRecord) -> bool:
    annotations = record.annotations or {}
    return annotations.get("destructiveHint") is True
