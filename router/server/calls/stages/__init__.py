"""The stages of a tool call (`router.server.calls.pipeline`), one module each."""
