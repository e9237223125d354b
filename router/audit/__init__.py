"""The audit trail (`router.audit`): one hash-chained JSON line per decision the router makes
about a principal's request, written to a file that rotates by size and checked by
`mcp-router audit verify`."""

from router.audit.chain import Break, chain_files, verify
from router.audit.trail import AuditTrail
from router.core.errors import AuditUnavailable

__all__ = ["AuditTrail", "AuditUnavailable", "Break", "chain_files", "verify"]
