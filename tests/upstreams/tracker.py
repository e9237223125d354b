"""An upstream on the mcp SDK written the way many small in-house servers are: an issue
tracker whose tools have clipped names and one-line descriptions that say little
(`tkt_new`: "Creates tkt."), so a model, and search, cannot tell what they are for.

Tools: `tkt_new(proj, ttl, txt, pri)`, `tkt_ls(proj, st)`, `tkt_upd(id, st)`,
`tkt_rm(id)`, `usr_get(id)`, and `calls()`, which answers every call that reached the
other tools, one JSON object a line (`{"tool": ..., "arguments": {...}}`).
"""

import json
from typing import Any

from mcp.server.mcpserver import MCPServer

app = MCPServer("tracker")
_calls: list[dict[str, Any]] = []


def _reached(tool: str, **arguments: Any) -> None:
    _calls.append({"tool": tool, "arguments": arguments})


@app.tool()
async def tkt_new(proj: str, ttl: str, txt: str = "", pri: int = 3) -> str:
    """Creates tkt."""
    _reached("tkt_new", proj=proj, ttl=ttl, txt=txt, pri=pri)
    return f"{proj}-{len(_calls)}"


@app.tool()
async def tkt_ls(proj: str, st: str = "open") -> str:
    """Lists tkts."""
    _reached("tkt_ls", proj=proj, st=st)
    return "[]"


@app.tool()
async def tkt_upd(id: str, st: str) -> str:
    """Updates tkt st."""
    _reached("tkt_upd", id=id, st=st)
    return f"{id}: {st}"


@app.tool()
async def tkt_rm(id: str) -> str:
    """Rm tkt."""
    _reached("tkt_rm", id=id)
    return f"{id}: removed"


@app.tool()
async def usr_get(id: str) -> str:
    """Gets usr."""
    _reached("usr_get", id=id)
    return json.dumps({"id": id, "name": f"user {id}"})


@app.tool()
async def calls() -> str:
    """Every call that reached the tracker's other tools, one JSON object a line."""
    return "\n".join(json.dumps(call, sort_keys=True) for call in _calls)


if __name__ == "__main__":
    app.run()
