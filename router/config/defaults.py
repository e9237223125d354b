"""The built-in defaults of the configuration: what an unset timeout, port or limit means.

The store's tuning defaults (`exact_max_tools`, `ef_search`) are the store's own, in
`router/store/postgres/tuning.py`: the configuration is a lower layer than the store.
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_HTTP_PORT",
    "DEFAULT_IDLE_STOP",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_NAMES_AFTER_K",
    "DEFAULT_NAME_LINE_CHARS",
    "DEFAULT_PING_INTERVAL",
    "DEFAULT_RESULT_TOKENS",
    "DEFAULT_SUMMARY_TOKENS",
]

DEFAULT_CONNECT_TIMEOUT = 30.0
"""Seconds from spawn to a listed tool set; a cold `npx` spends much of it downloading."""
DEFAULT_CALL_TIMEOUT = 120.0
DEFAULT_PING_INTERVAL = 15.0
"""Seconds between liveness pings of a remote upstream: an idle streamable-HTTP connection
does not notice when its server goes away."""
DEFAULT_IDLE_STOP = 600.0
"""Seconds a lazily started upstream may go without a call before it is stopped again: long
enough that the calls of one task reuse one process, short enough that a server used once an
hour does not hold its memory all hour."""
DEFAULT_HTTP_PORT = 8765
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
DEFAULT_RESULT_TOKENS = 25_000
DEFAULT_SUMMARY_TOKENS = 250
"""`router.servers_summary_tokens`: the directory of the six example servers takes about 150
(benchmarks/results/listing-tokens.json, `servers_summary`); a config of many servers with long
descriptions is cut to this, a few hundred tokens being what a model reads at every turn."""
DEFAULT_NAMES_AFTER_K = 5
"""`router.names_after_k`: chosen on the dev halves by benchmarks/names_beyond.py
(benchmarks/results/names-beyond.json)."""
DEFAULT_NAME_LINE_CHARS = 80
