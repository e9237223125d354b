"""Records encrypted at rest: per-user upstream credentials in the cache folder or the store.

`SealedRecords` wraps any `Records` (the cache folder's files, the shared store's rows) and
encrypts every value with AES-256-GCM under a key derived (HKDF-SHA256) from the key
material `router.secrets_key` names. Each value is bound to its own place: the record's
kind and key are the associated data, so a row copied under another principal's key (or
another upstream's) fails to open instead of lending that principal someone else's token.
A value that does not open (another key, tampered, or bound elsewhere) reads as absent and
is logged by its place only; the person signs in again.

Where the key material comes from (`secrets_key_material`): `router.secrets_key` (`env` or
`file`), else the variable `MCP_ROUTER_SECRETS_KEY`, else, on one machine only, a key file
made once in the cache folder (0600). Replicas of a store must share one key, so there the
config requires it to be named.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from router.config.personal import DEFAULT_KEY_ENV, SecretsKey
from router.core.errors import ConfigError
from router.store.records import Held, Records, write_private

logger = logging.getLogger(__name__)

MIN_KEY_CHARS = 32
KEY_FILE = "secrets.key"
"""The key file made in the cache folder when no key is named (one machine only)."""
_MAGIC = b"mrs1"
_NONCE = 12


def secrets_key_material(setting: SecretsKey | None, cache_dir: Path) -> bytes:
    """The key material, from where `setting` names, the environment, or the cache folder.

    Raises:
        ConfigError: the named variable or file is missing, unreadable or too short.
    """
    if setting is not None and setting.env is not None:
        return _checked(os.environ.get(setting.env), f"router.secrets_key.env ({setting.env})")
    if setting is not None and setting.file is not None:
        try:
            text = setting.file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ConfigError(
                f"router.secrets_key.file: {setting.file} cannot be read "
                f"({type(exc).__name__}). Fix: create it with at least {MIN_KEY_CHARS} "
                "random characters, readable by the router only."
            ) from exc
        return _checked(text, f"router.secrets_key.file ({setting.file})")
    if os.environ.get(DEFAULT_KEY_ENV):
        return _checked(os.environ[DEFAULT_KEY_ENV], DEFAULT_KEY_ENV)
    path = cache_dir / KEY_FILE
    if not path.exists():
        write_private(path, secrets.token_urlsafe(48).encode())
        logger.info("made a key for per-user credentials at %s", path)
    return _checked(path.read_text(encoding="utf-8").strip(), str(path))


def _checked(value: str | None, where: str) -> bytes:
    if value is None or len(value.strip()) < MIN_KEY_CHARS:
        state = "is not set" if value is None else "is too short"
        raise ConfigError(
            f"{where} {state}: per-user credentials need at least {MIN_KEY_CHARS} characters "
            'of key material. Fix: e.g. `python -c "import secrets; '
            'print(secrets.token_urlsafe(48))"` into it.'
        )
    return value.strip().encode()


class Sealer:
    """AES-256-GCM with a key derived from the key material; values bound to a place."""

    def __init__(self, material: bytes) -> None:
        key = HKDF(
            algorithm=hashes.SHA256(), length=32, salt=None, info=b"mcp-router credentials v1"
        ).derive(material)
        self._aead = AESGCM(key)

    def seal(self, place: str, value: bytes) -> bytes:
        nonce = os.urandom(_NONCE)
        return _MAGIC + nonce + self._aead.encrypt(nonce, value, place.encode())

    def open(self, place: str, sealed: bytes) -> bytes | None:
        """The value, or None when it was not sealed by this key for this place."""
        if not sealed.startswith(_MAGIC) or len(sealed) < len(_MAGIC) + _NONCE + 16:
            return None
        nonce = sealed[len(_MAGIC) : len(_MAGIC) + _NONCE]
        try:
            return self._aead.decrypt(nonce, sealed[len(_MAGIC) + _NONCE :], place.encode())
        except InvalidTag:
            return None


class _SealedHeld:
    def __init__(self, held: Held, sealer: Sealer, place: str, where: str) -> None:
        self._held, self._sealer, self._place, self._where = held, sealer, place, where

    def get(self) -> bytes | None:
        return _opened(self._sealer, self._place, self._held.get(), self._where)

    def put(self, value: bytes) -> None:
        self._held.put(self._sealer.seal(self._place, value))


def _opened(sealer: Sealer, place: str, raw: bytes | None, where: str) -> bytes | None:
    if raw is None:
        return None
    value = sealer.open(place, raw)
    if value is None:
        logger.warning(
            "sealed record %s at %s does not open with this key (another key, or moved); "
            "treated as absent",
            place,
            where,
        )
    return value


class SealedRecords:
    """`records`, every value encrypted and bound to its kind and key."""

    def __init__(self, records: Records, sealer: Sealer) -> None:
        self._records = records
        self._sealer = sealer

    @property
    def where(self) -> str:
        return self._records.where

    @property
    def shared(self) -> bool:
        return self._records.shared

    def get(self, kind: str, key: str) -> bytes | None:
        place = f"{kind}/{key}"
        return _opened(self._sealer, place, self._records.get(kind, key), self.where)

    def put(self, kind: str, key: str, value: bytes) -> None:
        self._records.put(kind, key, self._sealer.seal(f"{kind}/{key}", value))

    def delete(self, kind: str, key: str) -> bool:
        return self._records.delete(kind, key)

    @contextmanager
    def locked(self, kind: str, key: str) -> Iterator[Held]:
        with self._records.locked(kind, key) as held:
            yield _SealedHeld(held, self._sealer, f"{kind}/{key}", self.where)
