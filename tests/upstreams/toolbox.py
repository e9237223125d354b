"""An upstream on the mcp SDK with a few everyday tools, for the playground test.

Tools: `get_forecast(city, days)`, `convert_currency(amount, source, target)`,
`translate_text(text, language)`, and `search_notes(query)`, whose description carries markup
and a script, as a hostile upstream might: the playground must show it as text.
"""

from mcp.server.mcpserver import MCPServer

app = MCPServer("toolbox")

HOSTILE = (
    "<img src=\"x\" onerror=\"document.title='pwned'\"><script>document.title='pwned'</script>"
    "Search the notes for a phrase"
)


@app.tool()
async def get_forecast(city: str, days: int = 3) -> str:
    """Get the weather forecast for a city: temperature, rain and wind for the next days."""
    return f"{city}: sunny for {days} days"


@app.tool()
async def convert_currency(amount: float, source: str, target: str) -> str:
    """Convert an amount of money from one currency to another at today's exchange rate."""
    return f"{amount} {source} is {amount} {target}"


@app.tool()
async def translate_text(text: str, language: str) -> str:
    """Translate a text into another language."""
    return text


@app.tool(description=HOSTILE)
async def search_notes(query: str) -> str:
    return f"no note matches {query}"


if __name__ == "__main__":
    app.run()
