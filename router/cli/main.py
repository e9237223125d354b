"""The `mcp-router` command line. Heavy modules load inside the commands, never here: a
command's own module is imported only when that command runs (`COMMANDS`), so `serve` pays
for no other command's imports and `--help` for none."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from router import __version__
from router.cli.progress import without_bars
from router.core.errors import RouterError, ServeError, StoreError, UpstreamError
from router.core.memory import importing

LOG_FORMATS = ("text", "json")
SIGPIPE_EXIT = 141
"""128 + SIGPIPE: what a shell reports for a program whose reader went away (`| head`)."""
# Bad input (an option value, a config or data file) is a usage error, exit code 2 as for
# argparse's own; these failed at run time instead, exit code 1.
_RUNTIME_FAILURES = (ServeError, StoreError, UpstreamError)

COMMANDS: dict[str, tuple[str, str, str]] = {
    "route": ("router.cli.route", "register", "rank a catalog's tools for a query"),
    "eval": ("router.cli.evaluate", "register", "measure retrieval quality over a query set"),
    "serve": (
        "router.cli.serve",
        "register",
        "serve the routed MCP server (stdio) in front of the configured upstreams",
    ),
    "inspect": (
        "router.cli.inspect",
        "register",
        "show each upstream's health and the tokens its tool schemas cost",
    ),
    "bench": (
        "router.cli.bench",
        "register",
        "token savings and tool-selection accuracy on the public sets (source checkout)",
    ),
    "import": (
        "router.cli.sources.import_config",
        "register",
        "gather the MCP servers of your hosts (Claude, Cursor, VS Code, ...) into one "
        "router config",
    ),
    "add": (
        "router.cli.sources.add",
        "register",
        "add a server from the MCP registry (its server.json, a URL or a registry name)",
    ),
    "auth": ("router.cli.auth", "register", "sign in to OAuth-protected remote upstreams"),
    "secrets": (
        "router.cli.auth",
        "register_secrets",
        "each principal's own keys for servers with ${user:NAME} values",
    ),
    "tools": (
        "router.cli.tools",
        "register",
        "review and approve tools held because their definition changed",
    ),
    "audit": ("router.cli.audit", "register", "check and read the audit trail"),
}
"""Each command: the module that registers and runs it, its register function, and the help
`mcp-router --help` lists (the module's own `add_parser(help=...)`, which a test holds equal)."""


if TYPE_CHECKING:  # generic in the stubs only
    _Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]
else:
    _Subparsers = argparse._SubParsersAction


class LazyCommands(_Subparsers):
    """The commands' subparsers, each an empty stand-in until its command is chosen: then its
    module is imported and registers the real one (`COMMANDS`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._loaded: set[str] = set()

    def load(self, name: str) -> argparse.ArgumentParser:
        """The command's real parser, its module imported and registered on first use."""
        if name in self._loaded:
            return self._name_parser_map[name]
        module, function, _ = COMMANDS[name]
        listed = list(self._choices_actions)  # the stand-ins' help, in the table's order
        del self._name_parser_map[name]
        getattr(importlib.import_module(module), function)(_OneCommand(self, name))
        self._choices_actions[:] = listed
        parser = self._name_parser_map[name]
        add_log_format(parser, argparse.SUPPRESS)  # also after the command: `serve --log-format`
        self._loaded.add(name)
        return parser

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        if isinstance(values, Sequence) and values and values[0] in COMMANDS:
            self.load(str(values[0]))
        super().__call__(parser, namespace, values, option_string)


class _OneCommand:
    """What a command's `register` is given: `add_parser` for that one command only."""

    def __init__(self, commands: LazyCommands, name: str) -> None:
        self._commands = commands
        self._name = name

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        if name != self._name:
            raise ValueError(f"{COMMANDS[self._name][0]} registers {name}, not {self._name}")
        return self._commands.add_parser(name, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-router",
        description="A tool-routing MCP gateway: one MCP server in front of many, "
        "listing only the tools a query needs.",
    )
    parser.add_argument("--version", action="version", version=f"mcp-router {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")
    add_log_format(parser, LOG_FORMATS[0])
    subparsers = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", action=LazyCommands
    )
    for name, (_, _, summary) in COMMANDS.items():
        subparsers.add_parser(name, help=summary)  # a stand-in, until the command is chosen
    return parser


def commands_of(parser: argparse.ArgumentParser) -> LazyCommands:
    """The parser's commands (`build_parser`'s)."""
    return next(a for a in parser._actions if isinstance(a, LazyCommands))


def add_log_format(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default=default,
        help="logs on stderr as text (default) or as one JSON object a line",
    )


def configure_logging(verbose: bool, log_format: str = "text") -> None:
    """Logs go to stderr only: in stdio mode stdout is the protocol channel."""
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
        force=True,
    )
    if log_format == "json":
        from router.cli.json_logs import JsonFormatter

        for handler in logging.getLogger().handlers:
            handler.setFormatter(JsonFormatter())
        without_bars()
    for noisy in ("httpx", "httpx2", "sentence_transformers", "bm25s", "filelock"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # The store says once that it is unreachable; the pool would say so at every retry.
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    with importing():  # the command's module, imported as it is chosen
        args = parser.parse_args(argv)
    configure_logging(args.verbose, args.log_format)
    try:
        code: int = args.handler(args)
        sys.stdout.flush()  # a closed stdout fails here, not at interpreter exit
    except BrokenPipeError:
        _silence_stdout()
        return SIGPIPE_EXIT
    except RouterError as exc:
        if args.log_format == "json":  # stderr stays one JSON object a line
            logging.getLogger("router.cli").error("mcp-router %s: error: %s", args.command, exc)
        else:
            print(f"mcp-router {args.command}: error: {exc}", file=sys.stderr)
        return 1 if isinstance(exc, _RUNTIME_FAILURES) else 2
    except KeyboardInterrupt:
        return 130
    return code


def _silence_stdout() -> None:
    """Point stdout at /dev/null: Python flushes it again at exit, which would fail again
    (the recipe of the `signal` module's "Note on SIGPIPE")."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # a stdout with no file descriptor (captured in tests)
        pass
    finally:
        os.close(devnull)
