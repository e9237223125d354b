"""Secrets and URL credentials out of every error, log line and status the router shows.

`redact(text)` is applied where foreign text enters (`router.upstream.failures`: what an
upstream, the SDK or httpx raised) and once more where an error leaves
(`router.server.lifecycle.errors`: JSON-RPC errors, `isError` results, HTTP bodies); every log
record
is redacted as it is made (`logging.setLogRecordFactory`, installed with the first config),
so no handler or formatter added later can see the raw text. It removes, in order:

1. every secret value a config this process read holds (`remember_config`, called by
   `router.config.loading`): `SecretStr` fields (OAuth client secrets, private keys), the
   values of fields that are kept out of a `repr` (headers, the store URL), `env` values,
   and the password and query values of every configured URL, each also as its words (the
   token of `Bearer TOKEN`) and percent-encoded. Values shorter than `MIN_SECRET` are left
   alone: `"3000"` or `"true"` are no credential, and replacing them would garble messages;
2. a URL's userinfo, query and fragment (`https://user:pw@host/p?key=SECRET` becomes
   `https://host/p`), wherever a URL appears, configured or not: query strings are where
   API keys live;
3. the credential of an `Authorization`-style `Bearer`, `Basic` or `Token` value of 16
   characters or more with a digit (an upstream's OAuth token is no config value, but an
   upstream may echo the header it got).

What is redacted becomes `[redacted]`. Secrets are remembered per process, at most
`MAX_SECRETS` (the oldest forgotten first: they belong to configs since replaced).
"""

from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, quote

from pydantic import BaseModel, SecretBytes, SecretStr

__all__ = [
    "MASK",
    "MAX_SECRETS",
    "MIN_SECRET",
    "redact",
    "redact_data",
    "redact_url",
    "remember",
    "remember_config",
    "secrets_of",
]

MASK = "[redacted]"
MIN_SECRET = 8
"""Shorter values are not treated as secrets."""
MAX_SECRETS = 4_096
SECRET_FIELDS = frozenset({"env"})
"""Fields whose values are secrets although their models show them (a child's environment
holds its API keys as often as not)."""

_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>`\\]+")
_TRAILING = ".,;:!?)]}"
_SCHEME_CREDENTIAL = re.compile(
    r"(?i)\b(bearer|basic|token)(\s+)(?=[A-Za-z\-._~+/]*\d)[A-Za-z0-9\-._~+/]{16,}=*"
)
"""A credential after its scheme: 16 characters or more, a digit among them (prose has
long words too, `token introspection_endpoint`, but seldom digits in them)."""


class _Secrets:
    """The secret values this process knows, longest first in one pattern."""

    def __init__(self) -> None:
        self._values: OrderedDict[str, None] = OrderedDict()
        self._pattern: re.Pattern[str] | None = None
        self._lock = threading.Lock()

    def add(self, values: Iterable[str]) -> None:
        with self._lock:
            for value in values:
                for form in {value, quote(value, safe="")}:
                    if len(form) >= MIN_SECRET:
                        self._values.pop(form, None)
                        self._values[form] = None
            while len(self._values) > MAX_SECRETS:
                self._values.popitem(last=False)
            ordered = sorted(self._values, key=len, reverse=True)
            self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def sub(self, text: str) -> str:
        pattern = self._pattern
        return pattern.sub(MASK, text) if pattern is not None else text


_SECRETS = _Secrets()
_factory_installed = False
_factory_lock = threading.Lock()


def redact(text: str, *, urls: bool = True) -> str:
    """`text` without the secrets this process knows, URL credentials and queries, and
    bearer credentials. `urls=False` keeps URLs whole (a URL a user is asked to open needs
    its query), the secrets in them masked all the same."""
    text = _SECRETS.sub(text)
    if urls:
        text = _URL.sub(_redacted_url_match, text)
    return _SCHEME_CREDENTIAL.sub(rf"\1\2{MASK}", text)


def redact_url(url: str) -> str:
    """The URL without its userinfo, query and fragment: `scheme://host:port/path`."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        return url.split("?", 1)[0].split("#", 1)[0]
    end = len(rest)
    for mark in "/?#":
        found = rest.find(mark)
        if found != -1:
            end = min(end, found)
    authority, tail = rest[:end], rest[end:]
    host = authority.rpartition("@")[2]
    path = tail.split("?", 1)[0].split("#", 1)[0]
    return f"{scheme}://{host}{path}"


def redact_data(value: Any, *, urls: bool = True) -> Any:
    """A JSON value with every string in it redacted (an error's `data`)."""
    if isinstance(value, str):
        return redact(value, urls=urls)
    if isinstance(value, Mapping):
        return {key: redact_data(item, urls=urls) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact_data(item, urls=urls) for item in value]
    return value


def remember(values: Iterable[str]) -> None:
    """Treat `values` as secrets from now on, in this process (logs included)."""
    _SECRETS.add(values)
    _install_record_factory()


def remember_config(config: object) -> None:
    """Treat every secret of a config (a pydantic model) as one: see `secrets_of`."""
    remember(secrets_of(config))


def secrets_of(value: object) -> set[str]:
    """The secret values a config holds: `SecretStr`s, the values of fields kept out of a
    `repr` and of `SECRET_FIELDS`, with their words, and the passwords and query values of
    every URL in it."""
    found: set[str] = set()
    _walk(value, found, secret=False)
    return found


def _walk(value: object, found: set[str], *, secret: bool) -> None:
    if isinstance(value, SecretStr):
        _secret_text(value.get_secret_value(), found)
    elif isinstance(value, SecretBytes):
        _secret_text(value.get_secret_value().decode(errors="replace"), found)
    elif isinstance(value, BaseModel):
        for name, field in type(value).model_fields.items():
            hidden = secret or not field.repr or name in SECRET_FIELDS
            _walk(getattr(value, name, None), found, secret=hidden)
    elif isinstance(value, Mapping):
        for item in value.values():
            _walk(item, found, secret=secret)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            _walk(item, found, secret=secret)
    elif isinstance(value, str):
        if secret:
            _secret_text(value, found)
        else:
            found.update(_url_secrets(value))


def _secret_text(text: str, found: set[str]) -> None:
    found.add(text)
    found.update(text.split())
    found.update(_url_secrets(text))


def _url_secrets(text: str) -> Iterable[str]:
    """The passwords and query values of the URLs in `text`."""
    for match in _URL.finditer(text):
        url = match.group(0)
        authority = url.partition("://")[2].split("/", 1)[0].split("?", 1)[0]
        userinfo, at, _ = authority.rpartition("@")
        if at and ":" in userinfo:
            yield userinfo.split(":", 1)[1]
        query = url.partition("?")[2].split("#", 1)[0]
        for _, item in parse_qsl(query, keep_blank_values=False):
            yield item


def _redacted_url_match(match: re.Match[str]) -> str:
    """The URL redacted, the prose's punctuation after it kept (never a mask's bracket: a
    secret in the query was masked already)."""
    url = match.group(0)
    core = url
    while core and core[-1] in _TRAILING and not core.endswith(MASK):
        core = core[:-1]
    return redact_url(core) + url[len(core) :]


def _install_record_factory() -> None:
    """Redact every log record as it is made, whichever handler or formatter shows it."""
    global _factory_installed
    with _factory_lock:
        if _factory_installed:
            return
        original = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = original(*args, **kwargs)
            _redact_record(record)
            return record

        logging.setLogRecordFactory(factory)
        _factory_installed = True


def _redact_record(record: logging.LogRecord) -> None:
    try:
        message = record.getMessage()
    except Exception:  # a bad format string: logging reports it when the record is shown
        return
    redacted = redact(message)
    if redacted != message:
        record.msg, record.args = redacted, None
    if record.exc_info and record.exc_info[1] is not None:
        text = logging.Formatter().formatException(record.exc_info)
        cleaned = redact(text)
        if cleaned != text:
            record.exc_info, record.exc_text = None, cleaned
