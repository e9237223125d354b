"""The `${VAR}` placeholders an entry made from a `server.json` reads, and their names.

A value the user supplies is never written: it becomes a `${VAR}` placeholder, which the
config loader fills from the environment (and refuses to start without, naming `VAR`).

- A whole input without a `value` (an environment variable, header or argument the user
  gives) is named after the input (`FIGMA_API_KEY`; a header `ENTRY_HEADER`).
- Each `{name}` in a `value` the document fixes is filled from the input's `variables`: a
  fixed value as written, a non-secret default as `${ENTRY_NAME:-default}` (optional),
  anything else as `${ENTRY_NAME}`, named after the entry and the `{name}` (`tickets-mcp` and
  `{api_key}` -> `TICKETS_MCP_API_KEY`), so that two servers' `{api_key}` never read one
  variable (one server's key would be sent to the other). A `{name}` the document does not
  declare is named the same way, secret if its input is: the schema says to leave it as
  written, but no server takes a literal `Bearer {token}`, and publishers write exactly that.
- An optional input whose `value` needs the user is left out and named, as an optional
  input without a value is: a placeholder left unset would stop the whole config.

Names are upper snake case (`apiKey` -> `API_KEY`). One `{name}` written again (with the
same default, or none) is one variable; any other two values
whose names come out the same are told apart as `NAME`, `NAME_2`, `NAME_3`, so two values
never share a variable unseen.
"""

from __future__ import annotations

import re
from collections.abc import Hashable

from router.hosts.registry.document import Input

__all__ = ["Placeholders", "variable_name"]

REFERENCE = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_.-]*)\}")
"""A `{name}` in a fixed value; a `${NAME}` already written is the config's own, kept."""
_UNSAFE_DEFAULT = re.compile(r"[$}]")
"""What `${NAME:-default}` cannot hold: such a default is written as it is."""


def variable_name(*parts: str) -> str:
    """`("acme", "apiKey")` -> `ACME_API_KEY`: an environment variable's name, never
    starting with a digit (the config's `${VAR}` would not read it)."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", "_".join(parts))
    name = re.sub(r"[^A-Za-z0-9]+", "_", words).strip("_").upper() or "VALUE"
    return f"_{name}" if name[0].isdigit() else name


class Placeholders:
    """The placeholders one entry reads, gathered as it is built, each listed once."""

    def __init__(
        self,
        entry: str,
        *,
        needed: list[Input],
        optional: list[Input],
        defaulted: list[Input],
    ) -> None:
        self.entry = entry
        self.needed, self.optional, self.defaulted = needed, optional, defaulted
        self._owners: dict[str, Hashable] = {}
        """Each variable's name -> what it stands for (an input, or a `{name}` and default)."""
        self._inputs = 0

    def value(self, item: Input, name: str, *, defaults: bool = True) -> str | None:
        """What the entry holds for `item`: its fixed value, filled; a required one's
        default, or a placeholder named `name` (always for a secret); an optional one's
        default (with `defaults`), or nothing: it is left out, and named."""
        if item.value is not None:
            if item.required or not any(
                _wants_user(item, ref) for ref in REFERENCE.findall(item.value)
            ):
                return REFERENCE.sub(lambda match: self._reference(item, match[1]), item.value)
        elif item.required:
            if item.default is not None and not item.secret:
                return item.default
            self._inputs += 1  # each input is a value of its own
            variable, _ = self._claim(name, ("input", self._inputs))
            self.needed.append(_renamed(item, variable))
            return f"${{{variable}}}"
        elif defaults and item.default is not None and not item.secret:
            return item.default
        self.optional.append(_renamed(item, name))
        return None

    def _reference(self, item: Input, ref: str) -> str:
        var = item.variables.get(ref)  # None: not declared, a value the user gives
        if var is not None and var.value is not None and not var.secret:
            return var.value
        default = var.default if var is not None and not var.secret else None
        if default is not None and _UNSAFE_DEFAULT.search(default):
            return default
        variable, first = self._claim(variable_name(self.entry, ref), (ref, default))
        if first:
            about = f"{{{ref}}} in {item.name}: {item.description}"
            if var is not None and var.description:
                about = var.description
            secret = item.secret or (var is not None and var.secret)
            listed = Input(variable, about, True, secret, default=default)
            (self.needed if default is None else self.defaulted).append(listed)
        return f"${{{variable}}}" if default is None else f"${{{variable}:-{default}}}"

    def _claim(self, name: str, owner: Hashable) -> tuple[str, bool]:
        """`name`, or `NAME_2`, `NAME_3` ... where another value holds it; and whether
        `owner` is named for the first time (and is to be listed)."""
        candidate, n = name, 1
        while candidate in self._owners and self._owners[candidate] != owner:
            n += 1
            candidate = f"{name}_{n}"
        first = candidate not in self._owners
        self._owners[candidate] = owner
        return candidate, first


def _wants_user(item: Input, ref: str) -> bool:
    """Whether `{ref}` in `item`'s value is a value only the user has."""
    var = item.variables.get(ref)
    return var is None or var.secret or (var.value is None and var.default is None)


def _renamed(item: Input, variable: str) -> Input:
    return Input(
        name=variable,
        description=item.description,
        required=item.required,
        secret=item.secret,
        default=item.default,
    )
