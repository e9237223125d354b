"""`python -m benchmarks.soak` (see cli.py)."""

from benchmarks.soak.cli import main

raise SystemExit(main())
