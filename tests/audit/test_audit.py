"""The audit trail (`router.audit`): one hash-chained line per decision, from a real router.

A stdio `mcp-router serve` in front of the shop upstream (`tests/upstreams/shop.py`) with a
trail; a scripted session calls a tool that runs, one that fails, one the policy denies,
one that asks first (the raw client cannot answer, so it is declined) and one that does not
exist. The trail holds one line for each, in order, and no secret; `mcp-router audit verify`
passes on it and fails after one byte is changed. With `required`, a trail that cannot be
written refuses calls before they reach the upstream, and they go on once it can again.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from router.audit import AuditTrail, chain_files, verify
from router.audit.chain import GENESIS, line_hash
from tests.conftest import ROOT
from tests.support.serving import raw_router, write_config
from tests.upstream.test_upstream_pool import script

pytestmark = pytest.mark.processes

SECRET = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
"""A GitHub-token-shaped value a caller puts in an argument: it must never reach the trail."""
API_KEY = "sk-shop-5f3c9a7e1b2d4c6a"
"""The shop upstream's key in its config `env`: a secret even in an argument named clear."""


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "router", "audit", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def shop_config(directory: Path, trail: Path, **audit: Any) -> Path:
    return write_config(
        directory,
        {"shop": script("shop", env={"SHOP_API_KEY": API_KEY})},
        audit={"path": str(trail), "fields": ["subject"], **audit},
        policy={"deny": ["shop/refund_order"], "confirm": ["shop/get_customer"]},
    )


async def events(router: Any) -> str:
    result = await router.call("shop__events", {})
    return "".join(block.get("text", "") for block in result["content"])


async def test_a_scripted_session_leaves_one_chained_line_per_decision(tmp_path: Path) -> None:
    trail = tmp_path / "audit" / "trail.jsonl"
    config = shop_config(tmp_path, trail)
    async with raw_router(config) as router:
        await router.initialize()
        with anyio.fail_after(60):
            await router.search_text("send an email")  # a search is not a decision
            sent = await router.call(
                "shop__send_email", {"to": "a@example.com", "subject": "hi", "body": SECRET}
            )
            failed = await router.call("shop__fail", {"reason": "on purpose"})
            denied = await router.request(
                "tools/call",
                {"name": "shop__refund_order", "arguments": {"order_id": "1", "amount": 5}},
            )
            asked = await router.call("shop__get_customer", {"customer_id": "c3"})
            unknown = await router.request("tools/call", {"name": "shop__nope", "arguments": {}})
            via_meta = await router.call(
                "call_tool",
                {
                    "name": "shop__send_email",
                    "arguments": {"to": "b@x", "subject": API_KEY, "body": "b"},
                },
            )
    assert not sent.get("isError") and failed["isError"] and asked["isError"]
    assert "error" in denied and "error" in unknown and not via_meta.get("isError")
    records = lines_of(trail)
    assert [(r["tool"], r["outcome"]) for r in records] == [
        ("shop__send_email", "ran"),
        ("shop__fail", "error"),
        ("shop__refund_order", "denied"),
        ("shop__get_customer", "declined"),
        ("shop__nope", "denied"),
        ("shop__send_email", "ran"),
    ]
    first = records[0]
    assert first["kind"] == "tool-call" and first["server"] == "shop"
    assert first["principal"] is None  # stdio: no identity at the front
    assert first["arguments"].startswith("sha256:") and first["fields"] == {"subject": '"hi"'}
    assert first["latency_ms"] >= 0 and first["result_bytes"] > 0 and first["replica"]
    assert first["prev"] == GENESIS
    assert len({r["session"] for r in records}) == 1 and records[0]["session"]
    assert SECRET not in trail.read_text("utf-8") and API_KEY not in trail.read_text("utf-8")
    assert records[-1]["fields"] == {"subject": '"[redacted]"'}
    assert stat.S_IMODE(trail.stat().st_mode) == 0o600

    checked = cli("verify", str(trail))
    assert checked.returncode == 0 and "ok: 6 lines in 1 files" in checked.stdout
    assert f"head {line_hash(trail.read_bytes().splitlines()[-1])}" in checked.stdout
    shown = cli("show", str(trail), "--json", "--since", "600s")
    assert [json.loads(line)["tool"] for line in shown.stdout.splitlines()][:2] == [
        "shop__send_email",
        "shop__fail",
    ]
    assert cli("show", str(trail), "--principal", "someone").stdout == ""

    raw = bytearray(trail.read_bytes())
    at = raw.index(b'"outcome":"denied"') + len(b'"outcome":"')
    raw[at : at + 1] = b"D"  # one byte changed
    trail.write_bytes(bytes(raw))
    broken = cli("verify", str(trail))
    # line 3 still parses, so the chain breaks where its hash is checked: at line 4
    assert broken.returncode == 1 and f"{trail}:4:" in broken.stdout


async def test_a_required_trail_that_cannot_be_written_refuses_calls_until_it_can(
    tmp_path: Path,
) -> None:
    trail = tmp_path / "trail.jsonl"
    trail.mkdir()  # a folder where the file should be: every write fails (even as root)
    config = shop_config(tmp_path, trail)
    async with raw_router(config) as router:
        await router.initialize()
        with anyio.fail_after(60):
            await router.search_text("send an email")
            ran_unrecorded = await router.call(
                "shop__send_email", {"to": "a@x", "subject": "1", "body": "b"}
            )
            refused = await router.call(
                "shop__send_email", {"to": "a@x", "subject": "2", "body": "b"}
            )
            trail.rmdir()  # writable again
            recorded = await router.call(
                "shop__send_email", {"to": "a@x", "subject": "3", "body": "b"}
            )
            seen = await events(router)
    # the first call ran before the trail could fail, so its result is withheld
    assert ran_unrecorded["isError"] and "audit trail cannot be written" in str(ran_unrecorded)
    assert refused["isError"] and "router.audit.required" in str(refused)
    assert not recorded.get("isError")
    assert "send_email a@x 1" in seen and "send_email a@x 3" in seen
    assert "send_email a@x 2" not in seen  # the refused call never reached the upstream
    kinds = [(r["kind"], r.get("outcome")) for r in lines_of(trail)]
    assert kinds[0] == ("trail-writable-again", None)
    assert ("tool-call", "ran") in kinds
    assert verify(chain_files(trail)) == (len(kinds), None)


async def test_a_trail_not_required_lets_calls_go_on(tmp_path: Path) -> None:
    trail = tmp_path / "trail.jsonl"
    trail.mkdir()
    config = shop_config(tmp_path, trail, required=False)
    async with raw_router(config) as router:
        await router.initialize()
        with anyio.fail_after(60):
            await router.search_text("send an email")
            result = await router.call(
                "shop__send_email", {"to": "a@x", "subject": "s", "body": "b"}
            )
    assert not result.get("isError")
    assert "audit trail" in (tmp_path / "router.log").read_text("utf-8")


def test_rotation_keeps_the_chain_across_files_and_verify_sees_a_change(tmp_path: Path) -> None:
    path = tmp_path / "trail.jsonl"
    trail = AuditTrail(path, max_bytes=600, keep=50, replica="r1")
    for n in range(40):
        trail.append({"kind": "tool-call", "tool": f"s__t{n}", "outcome": "ran"})
    files = chain_files(path)
    assert len(files) > 3 and files[-1] == path
    assert verify(files) == (40, None)
    again = AuditTrail(path, max_bytes=600, keep=50, replica="r2")  # a restart goes on
    again.append({"kind": "tool-call", "tool": "s__after", "outcome": "ran"})
    assert verify(chain_files(path)) == (41, None)
    middle = files[1]
    middle.write_bytes(middle.read_bytes().replace(b"s__t", b"s__T", 1))
    _, broken = verify(chain_files(path))
    assert broken is not None and broken.file == middle and broken.line == 2  # the next line
    middle.unlink()  # a file removed breaks it too, at the next file's first line
    _, gap = verify(chain_files(path))
    assert gap is not None and gap.file == chain_files(path)[1] and gap.line == 1


WRITER = """
import sys
from router.audit import AuditTrail
trail = AuditTrail(sys.argv[1], max_bytes=4000, keep=1000, replica=sys.argv[2])
for n in range(int(sys.argv[3])):
    trail.append({"kind": "tool-call", "tool": f"s__{sys.argv[2]}_{n}", "outcome": "ran"})
"""


def test_processes_writing_one_trail_at_once_keep_one_chain(tmp_path: Path) -> None:
    """Several writers of one trail (a serving router and the CLI recording an operator's
    change): each line still carries the hash of the line before it, whoever wrote that one,
    across rotations too."""
    path = tmp_path / "trail.jsonl"
    here = AuditTrail(path, max_bytes=4000, keep=1000, replica="here")
    here.append({"kind": "tool-call", "tool": "s__first", "outcome": "ran"})
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"w{n}", "60"], cwd=ROOT)
        for n in range(4)
    ]
    for writer in writers:
        assert writer.wait(timeout=120) == 0
    here.append({"kind": "tool-call", "tool": "s__last", "outcome": "ran"})  # after theirs
    files = chain_files(path)
    assert len(files) > 5  # rotated by several writers
    assert verify(files) == (1 + 4 * 60 + 1, None)
    tools = [r["tool"] for f in files for r in lines_of(f)]
    assert tools[0] == "s__first" and tools[-1] == "s__last" and len(set(tools)) == 242


def test_keep_deletes_the_oldest_and_verify_says_so(tmp_path: Path) -> None:
    path = tmp_path / "trail.jsonl"
    trail = AuditTrail(path, max_bytes=400, keep=2)
    for n in range(30):
        trail.append({"kind": "tool-call", "tool": f"s__t{n}", "outcome": "ran"})
    assert len(chain_files(path)) == 3
    checked = cli("verify", str(path))
    assert checked.returncode == 0 and "rotated away" in checked.stdout
    shutil.rmtree(tmp_path / "nothing", ignore_errors=True)
    assert cli("verify", str(tmp_path / "nothing.jsonl")).returncode == 2


def test_every_field_of_a_line_is_bounded_and_says_what_was_cut(tmp_path: Path) -> None:
    path = tmp_path / "trail.jsonl"
    uri = "é" * 5000 + "\U0001f600" * 10  # cut inside: what is kept is still whole characters
    AuditTrail(path).append(
        {
            "kind": "resource-read",
            "name": uri,
            "principal": {"sub": "s" * 10_000, "iss": "https://issuer"},
            "fields": {f"arg{n}": '"v"' for n in range(100)},
            "outcome": "denied",
        }
    )
    line = path.read_bytes()
    record = json.loads(line.decode("utf-8"))
    assert len(line) < 32_000 and verify([path]) == (1, None)
    assert record["name"] == uri[:2048] and record["principal"]["iss"] == "https://issuer"
    assert record["cut"]["name"] == {
        "chars": 5010,
        "sha256": hashlib.sha256(uri.encode("utf-8")).hexdigest(),
    }
    assert len(record["principal"]["sub"]) == 512 and record["cut"]["principal.sub"]["chars"]
    assert len(record["fields"]) == 32 and record["cut"]["fields"] == {"items": 100}
    assert record["outcome"] == "denied" and "outcome" not in record["cut"]


@pytest.mark.parametrize("torn", [b'{"kind":"x"', b"not json\n"])
def test_a_torn_or_foreign_line_breaks_the_chain(tmp_path: Path, torn: bytes) -> None:
    path = tmp_path / "trail.jsonl"
    AuditTrail(path).append({"kind": "tool-call", "outcome": "ran"})
    with path.open("ab") as handle:
        handle.write(torn)
    count, broken = verify([path])
    assert count == 2 and broken is not None and broken.line == 2


async def test_resource_reads_and_prompt_gets_are_on_the_trail(tmp_path: Path) -> None:
    trail = tmp_path / "trail.jsonl"
    config = write_config(
        tmp_path, {"large": script("large")}, audit={"path": str(trail), "fields": ["size"]}
    )
    async with raw_router(config) as router:
        await router.initialize()
        with anyio.fail_after(60):
            await router.search_text("words")
            read = await router.result("resources/read", {"uri": "large://text/100"})
            prompts = await router.result("prompts/list")
            name = next(p["name"] for p in prompts["prompts"] if p["name"].endswith("long"))
            got = await router.result("prompts/get", {"name": name, "arguments": {"size": "50"}})
            missing = await router.request("prompts/get", {"name": "nope", "arguments": {}})
    assert read["contents"] and got["messages"] and "error" in missing
    records = [r for r in lines_of(trail)]
    assert [(r["kind"], r["server"], r["name"], r["outcome"]) for r in records] == [
        ("resource-read", "large", "large://text/100", "ran"),
        ("prompt-get", "large", name, "ran"),
        ("prompt-get", None, "nope", "error"),
    ]
    assert records[1]["fields"] == {"size": '"50"'} and records[0]["result_bytes"] > 100
    assert verify(chain_files(trail)) == (3, None)


def test_the_documented_audit_section_is_a_valid_config() -> None:
    from router.config.loading import parse_config

    text = (ROOT / "docs" / "identities.md").read_text("utf-8")
    section = text[text.index("## The audit trail") :]
    example = section[section.index("```json") + len("```json") : section.index("```\n\n")]
    config = parse_config(json.loads("{" + example.strip() + ', "mcpServers": {}}'))
    audit = config.router.audit
    assert audit is not None and audit.required and audit.fields == ["repo", "path"]


async def test_a_code_mode_run_and_each_call_it_makes_are_on_the_trail(tmp_path: Path) -> None:
    trail = tmp_path / "trail.jsonl"
    config = write_config(
        tmp_path, {"shop": script("shop")}, mode="code", audit={"path": str(trail)}
    )
    program = (
        "await call_tool('shop__send_email', {'to': 'a@x', 'subject': 's', 'body': 'b'})\n"
        "await call_tool('shop__fail', {'reason': 'because'})\n"
    )
    async with raw_router(config) as router:
        await router.initialize()
        with anyio.fail_after(90):
            await router.search_text("send an email")
            result = await router.call("execute", {"code": program})
    assert result["isError"]  # the program raised on the failed call
    records = lines_of(trail)
    assert [(r["kind"], r.get("tool") or r.get("name"), r["outcome"]) for r in records] == [
        ("tool-call", "shop__send_email", "ran"),
        ("tool-call", "shop__fail", "error"),
        ("code-run", "execute", "error"),
    ]
    assert records[2]["arguments"].startswith("sha256:") and "call_tool" not in json.dumps(
        records[2]
    )


async def test_a_call_to_a_held_tool_is_on_the_trail_as_held(tmp_path: Path) -> None:
    trail = tmp_path / "trail.jsonl"
    honest = {"shifty": script("shifty", start="eager")}
    turned = {"shifty": script("shifty", env={"SHIFTY_TURNED": "1"}, start="eager")}
    async with raw_router(write_config(tmp_path, honest)) as router:  # its pins see it first
        await router.initialize()
        with anyio.fail_after(60):
            await router.search_text("look up a word")
    async with raw_router(write_config(tmp_path, turned, audit={"path": str(trail)})) as router:
        await router.initialize()
        with anyio.fail_after(60):
            await router.search_text("look up a word")
            held = await router.request(
                "tools/call", {"name": "shifty__lookup", "arguments": {"word": "x"}}
            )
    assert "error" in held
    [record] = lines_of(trail)
    assert (record["tool"], record["outcome"]) == ("shifty__lookup", "held")


def test_each_line_can_go_to_opentelemetry_logs_too(tmp_path: Path) -> None:
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter

    from router.audit import export

    memory = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
    assert export.export_audit_logs([memory])
    try:
        path = tmp_path / "trail.jsonl"
        AuditTrail(path).append({"kind": "tool-call", "tool": "s__t", "outcome": "ran"})
        export.flush()
        [record] = memory.get_finished_logs()
        assert record.log_record.body == path.read_text("utf-8").rstrip("\n")
    finally:
        export.stop()


async def test_a_router_exports_its_trail_to_otel_logs_on_stderr_not_stdout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "console")
    trail = tmp_path / "trail.jsonl"
    config = write_config(
        tmp_path, {"shop": script("shop")}, audit={"path": str(trail), "otel": True}
    )
    async with raw_router(config) as router:
        await router.initialize()
        with anyio.fail_after(60):
            await router.search_text("send an email")
            await router.call("shop__send_email", {"to": "a@x", "subject": "s", "body": "b"})
        lines = await router.finish()
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in lines)
    log = (tmp_path / "router.log").read_text("utf-8")
    assert "mcp_router.audit" in log and "shop__send_email" in log
