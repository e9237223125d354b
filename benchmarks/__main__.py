"""`python -m benchmarks`: the benchmark suite (see benchmarks/README.md)."""

from benchmarks.suite.cli import main

raise SystemExit(main())
