"""`python -m benchmarks.store_scale` (see cli.py)."""

from benchmarks.store_scale.cli import main

raise SystemExit(main())
