"""Each principal's own values for a server's `${user:NAME}` placeholders, sealed at rest.

One record per (server, principal) (kind `user-keys`, keyed by a hash of the server's name
and the principal's key), sealed with `router.secrets_key` (`router.store.sealed_records`:
the record's place is bound into the seal, so a record copied under another principal's key
does not open), in the shared store where there is one, so every replica reads it, else in
the cache folder. The record names the origin it was entered for (`router.pinning.origin`:
the command and arguments, or the URL's host and path): an entry changed to start another
program or reach another host finds no values, and its principals are asked again, so a key
never goes where its owner did not send it. Nothing here logs or returns a value except
`values`, which the connection fills its entry with.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass

from router.config import RemoteServer, StdioServer
from router.config.personal import user_value_names
from router.pinning.origin import origin_of
from router.store.records import Records
from router.upstream.listing.cache import ListingCache

KEYS_KIND = "user-keys"
MAX_VALUE = 8192
"""Characters of one value (a token, a key; a PEM key fits)."""


class BadValue(ValueError):
    """A value that cannot be placed where its entry puts it; the message never holds it."""


@dataclass(frozen=True, slots=True)
class KeysEntered:
    """What is stored for one principal and server: the names and when, never the values."""

    names: tuple[str, ...]
    set_at: float


def check_value(server: StdioServer | RemoteServer, name: str, value: str) -> None:
    """Refuse a value for `name` that `server` does not take, or cannot carry.

    Raises:
        BadValue: unknown name, empty, too long, or a control character (a header or an
            environment value cannot hold a line break).
    """
    if name not in user_value_names(server):
        raise BadValue(f"the server takes no value named {name}")
    if not value or len(value) > MAX_VALUE:
        raise BadValue(f"{name}: a value is 1 to {MAX_VALUE} characters")
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value):
        raise BadValue(f"{name}: a value holds no line breaks or control characters")


class UserKeys:
    """The principals' values in `records` (sealed ones). Every method blocks: call it in a
    worker thread from async code."""

    def __init__(self, records: Records) -> None:
        self.records = records

    @staticmethod
    def key(name: str, owner: str) -> str:
        return hashlib.sha256(f"{name}\x1f{owner}".encode()).hexdigest()[:40]

    def _read(self, name: str, server: StdioServer | RemoteServer, owner: str) -> dict[str, object]:
        raw = self.records.get(KEYS_KIND, self.key(name, owner))
        if not raw:
            return {}
        try:
            data = json.loads(raw)
        except ValueError:
            return {}
        if not isinstance(data, dict) or data.get("origin") != origin_of(server):
            return {}  # entered for another program or host: never sent here
        return data

    def values(
        self, name: str, server: StdioServer | RemoteServer, owner: str
    ) -> dict[str, str] | None:
        """`owner`'s value for each of `server`'s names; None while any is missing."""
        stored = self._read(name, server, owner).get("values")
        if not isinstance(stored, dict):
            return None
        found = {k: v for k, v in stored.items() if isinstance(v, str)}
        return found if set(user_value_names(server)) <= set(found) else None

    def describe(
        self, name: str, server: StdioServer | RemoteServer, owner: str
    ) -> KeysEntered | None:
        """The names `owner` has entered for `server`, and when; None for none."""
        data = self._read(name, server, owner)
        stored, set_at = data.get("values"), data.get("set_at")
        if not isinstance(stored, dict) or not isinstance(set_at, int | float):
            return None
        wanted = set(user_value_names(server))
        return KeysEntered(tuple(sorted(wanted & set(stored))), float(set_at))

    def set(
        self, name: str, server: StdioServer | RemoteServer, owner: str, values: dict[str, str]
    ) -> None:
        """Store `values` for `owner` (merged over what it entered before), under the
        record's lock so that two entries at once both land.

        Raises:
            BadValue: a value `check_value` refuses (nothing is stored then).
        """
        for each, value in values.items():
            check_value(server, each, value)
        key = self.key(name, owner)
        with self.records.locked(KEYS_KIND, key) as held:
            before = held.get()
            try:
                data = json.loads(before) if before else {}
            except ValueError:
                data = {}
            old = data.get("values") if data.get("origin") == origin_of(server) else None
            merged = {**(old if isinstance(old, dict) else {}), **values}
            record = {"origin": origin_of(server), "set_at": time.time(), "values": merged}
            held.put(json.dumps(record).encode())

    def revoke(self, name: str, owner: str) -> bool:
        """Forget `owner`'s values for `name`, and the listing its connection kept (a
        revoked principal is shown `sign_in` only, until it enters a value again); whether
        there were any."""
        ListingCache(None, self.records, owner=owner).forget(name)
        return self.records.delete(KEYS_KIND, self.key(name, owner))
