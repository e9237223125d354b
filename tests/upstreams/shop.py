"""An upstream on the mcp SDK with a shop's tools whose results are large, for code mode's
tests and token benchmark (`benchmarks/code_mode.py`).

Tools: `list_orders(status)` answers every order of that status (120 in all, each with its
lines) as structured content; `get_customer(customer_id)` one customer; `send_email(to,
subject, body)` records a mail; `refund_order(order_id, amount)` (destructiveHint) records a
refund; `fail(reason)` always raises, so its result is an error; `events()` answers what
was recorded, one a line. The data is the same at every start (seeded).
"""

import random

import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

app = MCPServer("shop")
_events: list[str] = []
_STATUSES = ("open", "shipped", "overdue", "cancelled")
_PRODUCTS = ("desk lamp", "office chair", "monitor arm", "keyboard", "cable kit", "webcam")


class Line(BaseModel):
    product: str
    quantity: int
    price: float


class Order(BaseModel):
    id: str
    customer_id: str
    status: str
    total: float
    lines: list[Line]
    note: str


class Orders(BaseModel):
    status: str
    count: int
    orders: list[Order]


class Customer(BaseModel):
    id: str
    name: str
    email: str
    tier: str


def _orders() -> list[Order]:
    chooser = random.Random(7)
    orders = []
    for n in range(120):
        lines = [
            Line(
                product=chooser.choice(_PRODUCTS),
                quantity=chooser.randint(1, 4),
                price=round(chooser.uniform(9, 400), 2),
            )
            for _ in range(chooser.randint(1, 4))
        ]
        orders.append(
            Order(
                id=f"o-{1000 + n}",
                customer_id=f"c-{chooser.randint(1, 40):03d}",
                status=_STATUSES[n % len(_STATUSES)],
                total=round(sum(line.quantity * line.price for line in lines), 2),
                lines=lines,
                note=chooser.choice(("gift wrap", "leave at the door", "call first", "")),
            )
        )
    return orders


ORDERS = _orders()


@app.tool(annotations=types.ToolAnnotations(read_only_hint=True))
async def list_orders(status: str = "all") -> Orders:
    """List the shop's orders of one status (open, shipped, overdue, cancelled, or all), each
    with its customer, total and lines."""
    found = [o for o in ORDERS if status in ("all", o.status)]
    return Orders(status=status, count=len(found), orders=found)


@app.tool(annotations=types.ToolAnnotations(read_only_hint=True))
async def get_customer(customer_id: str) -> Customer:
    """Get one customer of the shop by id: name, email and loyalty tier."""
    number = int(customer_id.removeprefix("c-"))
    tier = ("gold", "silver", "bronze")[number % 3]
    return Customer(
        id=customer_id, name=f"Customer {number}", email=f"c{number}@example.com", tier=tier
    )


@app.tool()
async def send_email(to: str, subject: str, body: str) -> str:
    """Send an email to a customer."""
    _events.append(f"send_email {to} {subject}")
    return f"sent to {to}"


@app.tool(annotations=types.ToolAnnotations(destructive_hint=True))
async def refund_order(order_id: str, amount: float) -> str:
    """Refund an order, in full or in part."""
    _events.append(f"refund_order {order_id} {amount:g}")
    return f"refunded {amount:g} on {order_id}"


@app.tool()
async def fail(reason: str) -> str:
    """Always fails, with the reason given."""
    raise ToolError(f"failed on purpose: {reason}")


@app.tool()
async def events() -> str:
    """What was recorded so far, one a line."""
    return "\n".join(_events)


if __name__ == "__main__":
    app.run()
