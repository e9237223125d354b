"""A `BROWSER` for unattended sign-ins: open the authorization URL as a browser would, and
follow the authorization server's redirects until one reaches the loopback callback.

`BROWSER="python -m tests.conformance.follow_redirects %s"` makes Python's `webbrowser` (and so
`mcp-router auth login`) use it. Exits 0 once the callback answered.
"""

from __future__ import annotations

import sys
from urllib.parse import urljoin, urlsplit

import httpx2

MAX_HOPS = 10


def follow(url: str) -> int:
    with httpx2.Client(timeout=30, follow_redirects=False) as http:
        for _ in range(MAX_HOPS):
            response = http.get(url)
            location = response.headers.get("location")
            if response.is_redirect and location:
                url = urljoin(url, location)
                continue
            host = urlsplit(url).hostname
            if host in ("127.0.0.1", "localhost") and urlsplit(url).path == "/callback":
                return 0 if response.status_code == 200 else 1
            print(f"follow_redirects: stopped at {url}: {response.status_code}", file=sys.stderr)
            return 1
    return 1


if __name__ == "__main__":
    sys.exit(follow(sys.argv[1]))
