"""`python -m benchmarks.peoples_requests`: see `benchmarks.peoples_requests.run`."""

from benchmarks.peoples_requests.run import main

raise SystemExit(main())
