"""Start-up, search latency, embedding throughput, resident memory and call overhead of the
router, against FastMCP's proxy and the upstreams alone: `python -m benchmarks.perf`."""
