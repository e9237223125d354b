"""The vocabulary every layer shares: errors, the catalog, naming, the meta-tools, tool patterns,
the change broadcast, redaction, tracing.
"""
