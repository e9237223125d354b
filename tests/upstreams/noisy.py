"""A handshake-era upstream that writes junk to its stdout and stderr.

Before its first message and after every answer it prints lines that are not JSON-RPC
(plain text, and JSON that is not a message) to stdout, and chatter to stderr, as careless
servers do. Tool: `shout(text)` answers the text in capitals.
"""

import json
import sys

TOOLS = [
    {
        "name": "shout",
        "description": "Repeat a text in capital letters",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "What to shout"}},
            "required": ["text"],
        },
    }
]


def junk(note: str) -> None:
    sys.stdout.write(f"noisy junk on stdout: {note}\n")
    sys.stdout.write(json.dumps({"noisy": note}) + "\n")
    sys.stdout.flush()
    print(f"noisy junk on stderr: {note}", file=sys.stderr, flush=True)


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
    junk("after a message")


def handle(message: dict[str, object]) -> None:
    method, request_id = message.get("method"), message.get("id")
    params = message.get("params") or {}
    assert isinstance(params, dict)
    if request_id is None:
        return
    if method == "initialize":
        result: dict[str, object] = {
            "protocolVersion": "2024-11-05",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "noisy", "version": "1.0"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call" and params.get("name") == "shout":
        arguments = params.get("arguments") or {}
        assert isinstance(arguments, dict)
        text = str(arguments.get("text", "")).upper()
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    else:
        error = {"code": -32601, "message": f"no method {method}"}
        send({"jsonrpc": "2.0", "id": request_id, "error": error})
        return
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def main() -> None:
    junk("before any message")
    for line in sys.stdin:
        if line.strip():
            handle(json.loads(line))


if __name__ == "__main__":
    main()
