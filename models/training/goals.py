"""Requests in users' words: the goal and its object, not the tool's own verb.

The pools' synthetic requests restate a tool ("create issue in github", "adds file contents
to the staging area"); users say what they want done to what ("I need a new issue on
github", "get rid of that branch", "keep a note of the visit"). These templates take the
tool's object (its name's words without its verb and its server's, else the words after the
verb of its description's first sentence) and phrase the goal its verb stands for, the way
users phrase it: one family of verbs (create, read, list, search, change, delete, send,
run, save, fetch to disk) each with its own goals. Half the time the request names the
service ("on github"), as users often do; a third of the time it carries argument values
(`models.training.arguments`). Nothing is random beyond the seeded generator passed in.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

from models.training.arguments import argument_request
from router.core.catalog import split_identifier

_FAMILIES: tuple[tuple[frozenset[str], tuple[str, ...]], ...] = (
    (
        frozenset({"create", "add", "new", "insert", "make", "generate", "register", "open"}),
        (
            "I need a new {object}",
            "set me up with a {object}",
            "can you make a {object} for me",
            "we need another {object}",
            "put a {object} together",
        ),
    ),
    (
        frozenset({"get", "read", "retrieve", "fetch", "show", "view", "describe", "check"}),
        (
            "what does the {object} say",
            "pull up the {object}",
            "I want to see the {object}",
            "tell me about the {object}",
            "what's the {object} right now",
        ),
    ),
    (
        frozenset({"list", "enumerate", "browse", "all"}),
        (
            "which {object} do I have",
            "what {object} are there",
            "give me an overview of the {object}",
            "I'd like to go through the {object}",
        ),
    ),
    (
        frozenset({"search", "find", "query", "lookup", "look", "discover", "locate"}),
        (
            # the object is the thing sought (issues) or the place searched (pubmed)
            "dig through the {object}",
            "go looking through {object}",
            "see what {object} turns up",
            "I'm trying to track something down in {object}",
        ),
    ),
    (
        frozenset({"update", "edit", "modify", "set", "change", "rename", "patch", "move"}),
        (
            "the {object} needs changing",
            "fix up the {object}",
            "tweak the {object} a bit",
            "the {object} is wrong, correct it",
        ),
    ),
    (
        frozenset({"delete", "remove", "drop", "destroy", "clear", "cancel", "revoke"}),
        (
            "get rid of the {object}",
            "I don't need the {object} anymore",
            "throw away that {object}",
            "clean up the {object}",
        ),
    ),
    (
        frozenset({"send", "post", "notify", "reply", "publish", "share", "email"}),
        (
            "let them know with a {object}",
            "get the {object} out to people",
            "shoot off the {object}",
        ),
    ),
    (
        frozenset({"run", "execute", "start", "trigger", "launch", "deploy", "invoke"}),
        (
            "kick off the {object}",
            "get the {object} going",
            "fire up the {object}",
        ),
    ),
    (
        frozenset({"save", "store", "remember", "record", "log", "note", "write"}),
        (
            "keep a note of the {object}",
            "remember the {object} for later",
            "don't let me forget the {object}",
        ),
    ),
    (
        frozenset({"download", "export", "backup", "dump"}),
        (
            "I want a copy of the {object} on my machine",
            "save the {object} somewhere safe",
        ),
    ),
)
_VERBS = {verb: templates for verbs, templates in _FAMILIES for verb in verbs}
_STOP = frozenset({"a", "an", "the", "of", "for", "to", "in", "on", "from", "by", "with", "and"})
_CUT = re.compile(r"[,.;:()\[\]]| (that|which|using|based|via|if|when|so|and return)\b")


def _stem(word: str) -> str:
    """A verb as the families list it: "creates" -> "create", "lists" -> "list"."""
    for ending in ("ies", "es", "s"):
        base = word[: -len(ending)] + ("y" if ending == "ies" else "")
        if word.endswith(ending) and base in _VERBS:
            return base
    return word


def _service(server: str) -> str:
    """The service as a user names it: "@acme/emoji-hub-mcp" -> "emoji hub"."""
    words = split_identifier(server.rsplit("/", 1)[-1]).lower().split()
    return " ".join(w for w in words if w not in {"mcp", "server"})


def goal_object(name: str, server: str, described: str) -> tuple[str, str] | None:
    """The tool's verb and its object in plain words, or None where either is missing."""
    server_words = set(split_identifier(server).lower().split())
    words = split_identifier(name).lower().split()
    verb = next((_stem(w) for w in words if _stem(w) in _VERBS), None)
    if verb is not None:
        rest = [w for w in words if _stem(w) != verb and w not in server_words]
        if rest and any(w not in _STOP for w in rest):
            return verb, " ".join(rest)
    said = _CUT.split(described.lower(), maxsplit=1)[0].split()
    if not said or _stem(said[0]) not in _VERBS:
        return None
    rest = said[1:8]
    while rest and rest[0] in _STOP | {"new", "existing", "all", "one", "or", "more"}:
        rest = rest[1:]
    return (_stem(said[0]), " ".join(rest)) if rest else None


def goal_request(
    name: str,
    server: str,
    described: str,
    properties: Sequence[tuple[str, Mapping[str, Any]]],
    rng: random.Random,
) -> str | None:
    """A request for the tool in users' words (its goal and object), or None."""
    found = goal_object(name, server, described)
    if found is None:
        return None
    verb, thing = found
    request = rng.choice(_VERBS[verb]).format(object=thing)
    service = _service(server)
    if service and rng.random() < 0.5:
        request += rng.choice((" on {}", " in {}", " with {}")).format(service)
    if rng.random() < 1 / 3:
        return argument_request(request, properties, rng) or request
    return request
