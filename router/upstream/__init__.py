"""Upstream MCP servers: one owner task per server, gathered in a pool.

```python
async with UpstreamPool(config, on_tools_changed=index_tools) as pool:
    result = await pool.call_tool("time", "get_current_time", {"timezone": "Asia/Tokyo"})
```
"""

from router.upstream.backoff import BackoffPolicy
from router.upstream.connection.negotiation import ProtocolMemory
from router.upstream.listing.fetch import Listing
from router.upstream.listing.filtering import ToolFilter, matches
from router.upstream.pool import UpstreamPool
from router.upstream.state import UpstreamState, UpstreamStatus
from router.upstream.upstream import StatusChanged, ToolsChanged, Upstream

__all__ = [
    "BackoffPolicy",
    "Listing",
    "ProtocolMemory",
    "StatusChanged",
    "ToolFilter",
    "ToolsChanged",
    "Upstream",
    "UpstreamPool",
    "UpstreamState",
    "UpstreamStatus",
    "matches",
]
