"""Loading a configuration: reading and decoding the file (JSON or TOML), validating it,
and resolving the relative paths and commands in it against the config file's folder."""

from __future__ import annotations

import json
import logging
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from router.config.messages import describe, misspelled_server_keys
from router.config.personal import check_user_values
from router.config.servers import FOREIGN_KEYS, RemoteServer, StdioServer
from router.config.settings import RouterConfig
from router.core.errors import ConfigError
from router.core.redaction import remember_config

__all__ = ["load_config", "parse_config"]

# The package's name, as before the split: log lines name `router.config`.
logger = logging.getLogger(__name__)


def parse_config(
    data: Any,
    *,
    source: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> RouterConfig:
    """Validate already-parsed config data.

    Args:
        data: The decoded JSON or TOML document.
        source: The file it came from: named in errors, and the base of relative paths.
        environ: Variables for `${VAR}` expansion; defaults to `os.environ`.

    Raises:
        ConfigError: The data is not a valid configuration.
    """
    where = str(source) if source is not None else "<config>"
    if not isinstance(data, Mapping):
        raise ConfigError(
            f"{where}: the top level is not an object. "
            'Fix: write {"mcpServers": {"name": {"command": ...}}}.'
        )
    context = {"environ": os.environ if environ is None else environ}
    misspelled = misspelled_server_keys(where, data)
    typos = [line for lines in misspelled.values() for line in lines]
    try:
        config = RouterConfig.model_validate(data, context=context)
    except ValidationError as exc:
        # A kindless entry with a misspelled `command` or `url`: the typo says it all.
        rest = [
            describe(where, error)
            for error in exc.errors()
            if not (error["type"] == "server_kind" and error["loc"][1] in misspelled)
        ]
        raise ConfigError("\n".join([*typos, *rest])) from None
    except ConfigError as exc:
        raise ConfigError("\n".join([*typos, f"{where}: {exc}"])) from None
    if typos:
        raise ConfigError("\n".join(typos))
    check_user_values(
        config.servers,
        where,
        identities=config.router.http.oauth is not None,
        key_needed=config.router.store is not None and config.router.secrets_key is None,
    )
    for name, server in config.servers.items():
        unknown = sorted(set(server.model_extra or {}) - FOREIGN_KEYS)
        if unknown:
            logger.warning("%s: mcpServers.%s: ignoring unknown keys %s", where, name, unknown)
    base = Path(source).parent if source is not None else Path.cwd()
    config = _resolve_paths(config, base, Path(source) if source is not None else None)
    remember_config(config)  # its secrets never show in an error or a log line
    return config


def load_config(
    path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None
) -> RouterConfig:
    """Read a JSON or TOML configuration file (a Claude Desktop file works as it is).

    Raises:
        ConfigError: The file is missing, unparseable or invalid; the message names the
            file, the field and the fix.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{file}: no such file. Fix: pass the path of a config file.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{file}: cannot be read ({exc}).") from None
    return parse_config(_decode(file, text), source=file, environ=environ)


def _decode(file: Path, text: str) -> Any:
    """JSON for `.json`, TOML for `.toml`; anything else is tried as JSON, then TOML."""
    suffix = file.suffix.lower()
    if suffix == ".toml":
        return _decode_toml(file, text)
    if suffix == ".json":
        return _decode_json(file, text)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            pass
    raise ConfigError(
        f"{file}: neither valid JSON nor valid TOML. Fix: name it .json or .toml "
        "to see the exact syntax error."
    )


def _decode_json(file: Path, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{file}: line {exc.lineno} column {exc.colno}: invalid JSON ({exc.msg}). "
            "Fix: correct the syntax there (JSON allows no comments or trailing commas)."
        ) from None


def _decode_toml(file: Path, text: str) -> Any:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: invalid TOML ({exc}). Fix: correct the syntax there.") from None


def _resolve_paths(config: RouterConfig, base: Path, source: Path | None) -> RouterConfig:
    """Relative `cwd`, `cache_dir`, `secrets_key.file` and `command` paths are relative to
    the config file, as a reader expects (not to the server's `cwd`)."""

    def resolve(path: Path | None) -> Path | None:
        if path is None:
            return None
        path = path.expanduser()
        return path if path.is_absolute() else base / path

    servers: dict[str, StdioServer | RemoteServer] = {}
    for name, server in config.servers.items():
        if isinstance(server, StdioServer):
            update: dict[str, Any] = {"command": _resolve_command(server.command, base)}
            if server.cwd is not None:
                update["cwd"] = resolve(server.cwd)
            server = server.model_copy(update=update)
        servers[name] = server
    changes: dict[str, Any] = {"cache_dir": resolve(config.router.cache_dir)}
    key = config.router.secrets_key
    if key is not None and key.file is not None:
        changes["secrets_key"] = key.model_copy(update={"file": resolve(key.file)})
    router = config.router.model_copy(update=changes)
    return config.model_copy(update={"servers": servers, "router": router, "source": source})


def _resolve_command(command: str, base: Path) -> str:
    """`bin/server` or `~/bin/server` becomes an absolute path; a bare name (`uvx`) is left
    for the PATH lookup. Otherwise the OS would resolve it against whatever directory the
    host starts the router in, or against the server's `cwd`."""
    if command.startswith("~"):
        return str(Path(command).expanduser())
    separators = {"/", os.sep} | ({os.altsep} if os.altsep else set())
    if not any(sep in command for sep in separators) or Path(command).is_absolute():
        return command
    # Absolute: with `cwd` set, the OS would look for a relative one from there instead.
    return str((base / command).absolute())
