"""Token accounting: what a tool list costs in each wire format a host sends."""

from router.accounting.formats import ToolFormat, to_format, tool_list_payload
from router.accounting.tokens import TokenCounter

__all__ = ["TokenCounter", "ToolFormat", "to_format", "tool_list_payload"]
