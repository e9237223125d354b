"""The benchmark suite behind `mcp-router bench` and `python -m benchmarks`: token savings
and tool-selection accuracy on the public sets, as their catalogs grow, against baselines;
cost figures; live upstreams. Results: JSON, markdown, PNG charts."""
