"""An upstream on the mcp SDK with a finance team's ledger tools, for the profile tests."""

from mcp.server.mcpserver import MCPServer

app = MCPServer("ledger")


@app.tool()
async def get_balance(account: str) -> str:
    """Get the current balance of a ledger account."""
    return f"{account}: 1200.00 EUR"


@app.tool()
async def post_entry(account: str, amount: float, memo: str) -> str:
    """Post a journal entry to a ledger account."""
    return f"posted {amount} to {account} ({memo})"


@app.tool()
async def list_transactions(account: str, month: str) -> str:
    """List the transactions of a ledger account for one month."""
    return f"{account} {month}: 3 transactions"


if __name__ == "__main__":
    app.run()
