# The two quick-start commands: `make run` and `make test` (see README.md).
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTHON ?= python3
QUERY ?= what time is it in Tokyo

.PHONY: setup run route inspect example-deps serve-http bench-http test test-deps lint typecheck unit clean

setup: $(STAMP)

# torch is pinned and installed first: any other torch requirement makes pip pull a
# multi-GB CUDA build, and 2.13.0 is the CPU build this machine carries.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

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
bench-http: setup example-deps
	$(BIN)/python -m benchmarks.http_load

route: setup
	$(BIN)/mcp-router route --catalog examples/catalog.jsonl "$(QUERY)"

lint: setup
	$(BIN)/ruff check .

typecheck: setup
	$(BIN)/mypy

# Real upstream MCP servers (npm and PyPI) that the integration tests start.
test-deps:
	bash scripts/install-test-servers.sh

unit: setup test-deps
	$(BIN)/pytest

test: lint typecheck unit

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
