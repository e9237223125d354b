"""Long calls as tasks: the 2026-07-28 tasks extension (`io.modelcontextprotocol/tasks`)."""
