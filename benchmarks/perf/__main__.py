from benchmarks.perf.cli import main

raise SystemExit(main())
