"""An upstream on the mcp SDK whose results are as large as a test asks, for the result limit.

Tools: `text(size)` answers about `size` bytes of words (no structured content); `image(size)`
answers a PNG-typed image of `size` bytes; `rows(count)` answers `count` rows as structured
content with an output schema (the SDK adds the JSON of it as a text block too). The
resource template `large://text/{size}` reads `size` bytes of words, and the prompt
`long(size)` is one user message of `size` bytes of words.
"""

import random

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.types import Image
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel

app = MCPServer("large")
_WORDS = [f"w{n:x}" for n in range(4096)] + ["the", "of", "and", "result", "router", "\n"]


def words(size: int) -> str:
    """`size` bytes of ASCII words, the same for the same size."""
    chooser = random.Random(size)
    text = " ".join(chooser.choices(_WORDS, k=size // 4 + 1))
    return text[:size]


class Rows(BaseModel):
    count: int
    rows: list[str]


@app.tool(structured_output=False)
def text(size: int) -> CallToolResult:
    """Answer `size` bytes of text."""
    return CallToolResult(content=[TextContent(text=words(size))])


@app.tool()
def image(size: int) -> Image:
    """Answer an image of `size` bytes."""
    return Image(data=random.Random(size).randbytes(size), format="png")


@app.tool()
def rows(count: int) -> Rows:
    """Answer `count` numbered rows of words."""
    return Rows(count=count, rows=[f"row {n}: {words(40 + n % 7)}" for n in range(count)])


@app.resource("large://text/{size}")
def text_resource(size: str) -> str:
    """`size` bytes of words, as a resource."""
    return words(int(size))


@app.prompt()
def long(size: str) -> str:
    """A prompt of `size` bytes of words."""
    return words(int(size))


if __name__ == "__main__":
    app.run()
