# The two quick-start commands: `make run` and `make test` (see README.md).
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
PYTHON ?= python3
QUERY ?= what time is it in Tokyo

.PHONY: setup test-setup run route inspect example-deps serve-http bench-http test test-deps lint typecheck docs unit check check-tests test-timings clean conformance-deps conformance

setup: $(STAMP)

# The product needs no PyTorch: the default embedder runs on onnxruntime.
# Its output goes to stderr: `make run` keeps stdout for JSON-RPC.
$(STAMP): pyproject.toml
	@echo "setting up $(VENV) (no PyTorch)" >&2
	@$(PYTHON) -m venv $(VENV) >&2
	@$(BIN)/pip install --quiet --no-compile -e . >&2
	@touch $(STAMP)

# The tests also run the sentence-transformers backend (the `st` extra) against the default.
# torch is pinned and installed first: any other torch requirement makes pip pull a
# multi-GB CUDA build, and 2.13.0 is the CPU build this machine carries.
test-setup: $(TEST_STAMP)

# --no-compile: pip's byte-compiling of every file it installs (torch's above all) took more
# CPU than the install; Python compiles what it imports, once, on first use.
$(TEST_STAMP): $(STAMP)
	$(BIN)/pip install --quiet --no-compile torch==2.13.0
	$(BIN)/pip install --quiet --no-compile -e '.[dev,st]'
	touch $(TEST_STAMP)

# The example upstreams (PyPI and npm) that examples/servers.json starts.
example-deps:
	@bash scripts/install-example-servers.sh >&2

# The main job: the router over stdio in front of the example servers (an MCP host
# such as Claude Desktop starts this; by hand, it waits for JSON-RPC on stdin).
run: setup example-deps
	@$(BIN)/mcp-router serve --config examples/servers.json

inspect: setup example-deps
	$(BIN)/mcp-router inspect --config examples/servers.json

# The router over HTTP on 127.0.0.1:8765 (MCP at /mcp and /sse, REST at /v1/route);
# export ROUTER_TOKEN to require a bearer token.
serve-http: setup example-deps
	$(BIN)/mcp-router serve --http --config examples/servers.json

# The HTTP front under 20 concurrent clients (needs wrk: apt-get install wrk).
bench-http: test-setup example-deps
	$(BIN)/python -m benchmarks.http_load

route: setup
	$(BIN)/mcp-router route --catalog examples/catalog.jsonl "$(QUERY)"

lint: test-setup
	$(BIN)/ruff check .

typecheck: test-setup
	$(BIN)/mypy

# The documentation site (mkdocs.yml) into site/, warnings as errors: a page left out of the
# navigation, a link to a missing page, file or heading fails it.
docs: test-setup
	$(BIN)/mkdocs build --strict --quiet

# Real upstream MCP servers (npm and PyPI) that the integration tests start, and the
# example servers (tests check what `make run` serves). Each npm set has its own folder and
# lockfile (scripts/servers/): neither install changes what the other serves.
test-deps: example-deps
	bash scripts/install-test-servers.sh

# The official MCP conformance suite and the node 22 it needs: 0.1.16 into .cache/conformance
# (server scenarios), the 0.2.0 line into .cache/conformance-next (client authorization).
conformance-deps:
	bash scripts/install-conformance.sh

# The suite against the conformance fixture, directly and through the router in pass-through
# mode: writes benchmarks/results/conformance.json and docs/conformance.md.
conformance: test-setup conformance-deps
	$(BIN)/python -m benchmarks.conformance

# Test workers: the suite mostly waits on processes it starts; on 2 cores, 4 workers were
# faster than 3 (docs/testing.md has the measurements). --dist loadscope keeps a module's tests
# on one worker, so its module fixtures (a router, a database, a benchmark run) start once.
# Then the tests that measure load or time (`exclusive`) run alone, one at a time.
WORKERS ?= 4
TIMINGS := test-output

unit: test-setup test-deps
	@mkdir -p $(TIMINGS)
	MCP_ROUTER_TEST_TIMINGS=$(TIMINGS)/timings-parallel.json $(BIN)/pytest \
		-n $(WORKERS) --dist loadscope -p no:cacheprovider -m "not exclusive"
	MCP_ROUTER_TEST_TIMINGS=$(TIMINGS)/timings-exclusive.json $(BIN)/pytest \
		-p no:cacheprovider -m exclusive
	@$(BIN)/python scripts/test_timings.py --slowest $(TIMINGS)/timings-*.json

# The installs run two at a time (the venv and then mypy and the docs on one side, the
# servers on the other: each is one process's work, and there are two cores), then the tests.
test:
	@$(MAKE) --no-print-directory -j2 lint typecheck docs test-deps
	@$(MAKE) --no-print-directory unit

# The inner loop, in under 2 minutes: ruff, mypy, and the tests that start no process
# (tests/support/no_processes.py fails one that does without the `processes` marker).
check: lint typecheck check-tests

check-tests: test-setup
	MCP_ROUTER_NO_PROCESSES=1 $(BIN)/pytest -n 2 -q -p no:cacheprovider \
		-m "not processes and not exclusive"

# docs/testing.md's tables from the last `make unit` (LABEL names the block).
LABEL ?= latest
test-timings:
	$(BIN)/python scripts/test_timings.py $(TIMINGS)/timings-*.json --label "$(LABEL)"

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache site
