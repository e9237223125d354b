"""The wheel: built from this tree, installed into a fresh virtual environment and run from a
folder outside the checkout, as `pipx install` / `uv tool install` would run it.

The wheel goes in with `--no-deps`; its dependencies come from the test's own environment
through a `.pth` line (installing them again offline would take minutes). Lines in a `.pth`
are added after the new environment's own site-packages, and the checkout's editable hook
is a `.pth` of that other folder, which Python does not read from there: `router` imports
from the wheel, not from the checkout (asserted).
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from router import __version__
from tests.support.serving import initialize_request

pytestmark = pytest.mark.processes

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("router", "models", "pyproject.toml", "setup.py", "README.md")
QUERY = "what time is it in Tokyo"
INITIALIZE = initialize_request("packaging-test")


def _copy_sources(target: Path) -> Path:
    """The tree as it is now (committed or not), without caches, so that a stale `build/` of
    the checkout cannot leak into the wheel."""
    target.mkdir()
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target / name)
    return target


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    scratch = tmp_path_factory.mktemp("wheel")
    sources = _copy_sources(scratch / "src")
    dist = scratch / "dist"
    build = [sys.executable, "-m", "pip", "wheel", str(sources), "--no-deps"]
    build += ["--no-build-isolation", "--no-index", "--quiet", "--wheel-dir", str(dist)]
    subprocess.run(build, check=True, timeout=120, cwd=scratch)
    (built,) = dist.glob("mcp_router-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh environment with the wheel installed; its `bin` folder."""
    home = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(home)], check=True)
    python = home / "bin" / "python"
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps"]
    install += ["--no-index", "--quiet", str(wheel)]
    subprocess.run(install, check=True, timeout=120)
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    dependencies = "\n".join(site.getsitepackages())
    (Path(purelib) / "_test_dependencies.pth").write_text(dependencies + "\n", encoding="utf-8")
    return home / "bin"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A working folder outside the checkout, with a copy of the example catalog."""
    assert ROOT not in tmp_path.parents
    shutil.copy2(ROOT / "examples" / "catalog.jsonl", tmp_path / "catalog.jsonl")
    return tmp_path


def run(
    command: Sequence[str | Path], cwd: Path, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`command` in `cwd` with a minimal environment: no PYTHONPATH, no virtual environment."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(cwd),
        "MCP_ROUTER_CACHE_DIR": str(cwd / "cache"),
    }
    return subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_wheel_holds_every_package_and_every_data_file_of_the_tree(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    packages = [p.parent for p in (ROOT / "router").rglob("__init__.py")]
    missing = [
        str(p.relative_to(ROOT))
        for p in packages
        if f"{p.relative_to(ROOT)}/__init__.py" not in names
    ]
    assert not missing, f"packages left out of the wheel: {missing}"
    data = [
        f"router/{p.relative_to(ROOT / 'router')}"
        for p in (ROOT / "router").rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    ] + [
        f"router/models/{p.relative_to(ROOT / 'models')}"
        for p in (ROOT / "models").rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    ]
    assert "router/models/manifest.json" in data
    assert sorted(set(data) - names) == [], "data files left out (pyproject package-data)"


def test_the_installed_router_runs_from_the_wheel_outside_the_checkout(
    venv: Path, outside: Path
) -> None:
    where = run(
        [venv / "python", "-c", "import router.models, router; print(router.__file__)"], outside
    )
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(venv.parent), where.stdout
    version = run([venv / "mcp-router", "--version"], outside)
    assert version.stdout.strip() == f"mcp-router {__version__}"


def test_the_console_script_and_python_m_router_answer_the_same(venv: Path, outside: Path) -> None:
    """The default model (its manifest and tokenizer files come from the wheel) ranks a
    query the same either way."""
    route = ["route", "--catalog", "catalog.jsonl", "--json", "-k", "3", QUERY]
    script = run([venv / "mcp-router", *route], outside)
    module = run([venv / "python", "-m", "router", *route], outside)
    assert script.returncode == 0, script.stderr
    assert module.returncode == 0, module.stderr
    assert script.stdout == module.stdout
    ranked = json.loads(script.stdout)
    assert ranked["tools"][0]["name"] == "time__get_current_time"
    assert ranked["model"].startswith("minilm-l6-tools")  # hybrid: the packaged model loaded
    assert (
        run([venv / "mcp-router", "--help"], outside).stdout
        == run([venv / "python", "-m", "router", "--help"], outside).stdout
    )


def test_the_installed_router_serves_mcp_over_stdio(venv: Path, outside: Path) -> None:
    config = outside / "servers.json"
    config.write_text(json.dumps({"mcpServers": {}}), encoding="utf-8")
    serve: list[str | Path] = [venv / "mcp-router", "serve", "--config", config, "--bm25-only"]
    answer = run(serve, outside, stdin=json.dumps(INITIALIZE) + "\n")
    assert answer.returncode == 0, answer.stderr
    (line,) = answer.stdout.splitlines()
    result = json.loads(line)["result"]
    assert result["serverInfo"] == {"name": "mcp-router", "version": __version__}
