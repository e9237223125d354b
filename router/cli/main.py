"""The `mcp-router` command line. Heavy modules load inside the commands, never here."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from router import __version__
from router.cli import audit, auth, bench, evaluate, inspect, route, serve, tools
from router.cli.progress import without_bars
from router.cli.sources import add, import_config
from router.core.errors import RouterError, ServeError, StoreError, UpstreamError

LOG_FORMATS = ("text", "json")
SIGPIPE_EXIT = 141
"""128 + SIGPIPE: what a shell reports for a program whose reader went away (`| head`)."""
# Bad input (an option value, a config or data file) is a usage error, exit code 2 as for
# argparse's own; these failed at run time instead, exit code 1.
_RUNTIME_FAILURES = (ServeError, StoreError, UpstreamError)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-router",
        description="A tool-routing MCP gateway: one MCP server in front of many, "
        "listing only the tools a query needs.",
    )
    parser.add_argument("--version", action="version", version=f"mcp-router {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")
    _add_log_format(parser, LOG_FORMATS[0])
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    route.register(subparsers)
    evaluate.register(subparsers)
    serve.register(subparsers)
    inspect.register(subparsers)
    bench.register(subparsers)
    import_config.register(subparsers)
    add.register(subparsers)
    auth.register(subparsers)
    auth.register_secrets(subparsers)
    tools.register(subparsers)
    audit.register(subparsers)
    for command in subparsers.choices.values():  # also after the command: `serve --log-format`
        _add_log_format(command, argparse.SUPPRESS)
    return parser


def _add_log_format(parser: argparse.ArgumentParser, default: str) -> None:
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
