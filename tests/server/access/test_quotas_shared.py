"""Quotas across replicas (`router.store.quota_buckets`): two routers on one PostgreSQL store
count a principal's `calls_per_minute` in one table, so 20 concurrent calls split over them
give exactly the allowance, and the calls over it never reach either replica's upstream."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from router.store.postgres.store import PostgresStore
from tests.support.postgres import Postgres
from tests.support.replicas import module_postgres  # noqa: F401 (the postgres fixture)
from tests.support.serving import router_parameters, write_config
from tests.upstream.test_upstream_pool import SCRIPTS, first_text

pytestmark = pytest.mark.processes

COUNTING = SCRIPTS / "counting.py"


def test_a_take_is_all_or_nothing_across_scopes(postgres: Postgres) -> None:
    store = PostgresStore(postgres.url, namespace=uuid.uuid4().hex)
    store.open()
    try:
        buckets = store.quota_buckets()
        assert buckets.take("alice", [("*", 10), ("shop", 2)]) is None
        assert buckets.take("alice", [("*", 10), ("shop", 2)]) is None
        short = buckets.take("alice", [("*", 10), ("shop", 2)])
        assert short is not None and short[0] == 1 and 0.0 <= short[1] < 1.0
        # the refused take spent nothing from "*": 8 left there, for another upstream
        assert sum(buckets.take("alice", [("*", 10)]) is None for _ in range(12)) == 8
        assert buckets.take("bob", [("*", 10), ("shop", 2)]) is None  # bob's own buckets
    finally:
        store.close()


async def test_twenty_concurrent_calls_on_two_replicas_get_exactly_the_allowance(
    postgres: Postgres, tmp_path: Path
) -> None:
    store = {"url": postgres.url, "namespace": uuid.uuid4().hex}
    quotas = {"default": {"calls_per_minute": 7}}
    configs = []
    logs = [tmp_path / "a.log", tmp_path / "b.log"]  # what each replica's upstream received
    for name, log in zip(("a", "b"), logs, strict=True):
        folder = tmp_path / name
        folder.mkdir()
        counting = {"command": sys.executable, "args": [str(COUNTING), str(log)]}
        configs.append(write_config(folder, {"counting": counting}, store=store, quotas=quotas))
    results: list[Any] = []
    async with (
        Client(router_parameters(configs[0]), mode="legacy") as first,
        Client(router_parameters(configs[1]), mode="legacy") as second,
    ):
        replicas = (first, second)

        async def send(n: int) -> None:
            results.append(await replicas[n % 2].call_tool("counting__touch", {}))

        with anyio.fail_after(90):
            for replica in replicas:  # both up and their shop listed
                await replica.call_tool("search_tools", {"query": "touch the counter"})
            async with anyio.create_task_group() as group:
                for n in range(20):
                    group.start_soon(send, n)
    ran = [r for r in results if not r.is_error]
    over = [r for r in results if r.is_error]
    assert len(ran) == 7 and len(over) == 13
    assert all("over quota: calls_per_minute is 7" in first_text(r) for r in over)
    received = [line for log in logs for line in log.read_text("utf-8").splitlines()]
    touched = [line for line in received if "tools/call" in line and "touch" in line]
    assert len(touched) == 7  # the over-quota calls reached neither replica's upstream
