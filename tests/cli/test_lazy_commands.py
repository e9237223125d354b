"""Each command's module is imported only when that command runs (`router.cli.main.COMMANDS`):
`mcp-router --help` imports none of them, a command imports its own, and what a user sees
(the listing, each command's options) is what the modules register."""

import argparse
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from router.cli.main import COMMANDS, add_log_format, build_parser, commands_of
from tests.conftest import ROOT

LAUNCHER = ROOT / "tests" / "support" / "loaded_modules.py"
COMMAND_MODULES = {module for module, _, _ in COMMANDS.values()}


def eagerly_registered() -> argparse._SubParsersAction:  # type: ignore[type-arg]
    """Every command registered at once, as the CLI did before it loaded them lazily."""
    parser = argparse.ArgumentParser(prog="mcp-router")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module, function, _ in COMMANDS.values():
        getattr(importlib.import_module(module), function)(subparsers)
    return subparsers


def test_the_listing_gives_each_command_the_help_its_module_registers() -> None:
    registered = eagerly_registered()
    listed = {action.dest: action.help for action in registered._choices_actions}
    assert listed == {name: summary for name, (_, _, summary) in COMMANDS.items()}
    assert list(registered.choices) == list(COMMANDS)


def test_a_command_loaded_on_demand_has_the_options_its_module_registers() -> None:
    registered = eagerly_registered()
    for name in COMMANDS:
        parser = build_parser()
        loaded = commands_of(parser).load(name)
        assert "--log-format" in loaded.format_help()  # also after the command
        expected = registered.choices[name]
        add_log_format(expected, argparse.SUPPRESS)  # as the command parsers always had it
        assert loaded.format_help() == expected.format_help(), name


def test_a_parser_parses_twice_with_the_same_command() -> None:
    parser = build_parser()
    first = parser.parse_args(["route", "--catalog", "c.json", "find"])
    again = parser.parse_args(["route", "--catalog", "c.json", "find"])
    assert first.handler is again.handler


def imported_by(tmp_path: Path, *argv: str) -> set[str]:
    out = tmp_path / "modules.txt"
    subprocess.run(
        [sys.executable, str(LAUNCHER), str(out), *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    return set(out.read_text(encoding="utf-8").split())


@pytest.mark.processes
def test_help_imports_no_command_module(tmp_path: Path) -> None:
    modules = imported_by(tmp_path, "--help")
    assert "router.cli.main" in modules
    assert sorted(COMMAND_MODULES & modules) == []


@pytest.mark.processes
def test_a_command_imports_its_own_module_and_no_other(tmp_path: Path) -> None:
    modules = imported_by(tmp_path, "audit", "verify", "--help")
    assert sorted(COMMAND_MODULES & modules) == ["router.cli.audit"]
