"""A hand-written handshake-era upstream that shows what reaches it, for the metrics and
tracing tests.

Tools: `meta` answers the `_meta` of its own `tools/call` as JSON (the trace context the
router passed on), `fail` answers an `isError` result, `broken` a JSON-RPC error. The other
tools only make its catalog cost more tokens than the router's meta-tools, so a listing
saves some.
"""

import json
import sys

FILLER = [
    ("create_invoice", "Create an invoice for a customer with line items, currency and due date"),
    ("list_invoices", "List the invoices of a customer, newest first, with their status"),
    ("refund_payment", "Refund a captured payment in full or in part, with a reason"),
    ("get_customer", "Look up a customer by id or email and return their profile"),
    ("update_customer", "Change a customer's name, email, address or tax id"),
    ("send_receipt", "Email the receipt of a paid invoice to the customer"),
]
PARAMETERS = {
    "type": "object",
    "properties": {
        "customer": {"type": "string", "description": "the customer's id or email address"},
        "amount": {"type": "number", "description": "an amount in the invoice currency"},
        "note": {"type": "string", "description": "free text shown to the customer"},
    },
}
TOOLS = [
    {
        "name": "meta",
        "description": "Answer the _meta of this call",
        "inputSchema": {"type": "object"},
    },
    {"name": "fail", "description": "Answer an error result", "inputSchema": {"type": "object"}},
    {"name": "broken", "description": "Answer a JSON-RPC error", "inputSchema": {"type": "object"}},
    *({"name": n, "description": d, "inputSchema": PARAMETERS} for n, d in FILLER),
]


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(request_id: object, content: str, *, error: bool = False) -> None:
    result = {"content": [{"type": "text", "text": content}], "isError": error}
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue
        params = message.get("params") or {}
        if method == "initialize":
            result = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "traced", "version": "1.0"},
            }
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}})
        elif method == "tools/call" and params.get("name") == "meta":
            text(request_id, json.dumps(params.get("_meta") or {}))
        elif method == "tools/call" and params.get("name") == "broken":
            error = {"code": -32000, "message": "broken on purpose"}
            send({"jsonrpc": "2.0", "id": request_id, "error": error})
        elif method == "tools/call":
            text(request_id, f"{params.get('name')} failed", error=True)
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        else:
            error = {"code": -32601, "message": f"no method {method}"}
            send({"jsonrpc": "2.0", "id": request_id, "error": error})


if __name__ == "__main__":
    main()
