"""A person's browser for per-user sign-ins through the front (`router.upstream.personal`).

Each `SignInBrowser` is one browser: its own cookie jar, kept between the pages it opens.
The front's public origin in these tests is `https://router.test` (the audience's); the
browser resolves that name to the front on loopback, as DNS would, and keeps its cookies
under that https origin (so a Secure cookie is sent back as a real browser would). Sign-ins
go through the upstream's `--login` page (tests/upstreams/oauth_protected.py), which asks who
signs in (`user`). As a host's URL elicitation callback, it opens the link it is shown.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx2
import mcp_types as types

PUBLIC = "router.test"


class _ToFront(httpx2.AsyncBaseTransport):
    """Sends what the browser addresses to `router.test` to the front on loopback."""

    def __init__(self, front: str) -> None:
        self._front = httpx2.URL(front)
        self._inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url.copy_with(
            scheme=self._front.scheme, host=self._front.host, port=self._front.port
        )
        headers = [(k, v) for k, v in request.headers.raw if k.lower() != b"host"]
        sent = httpx2.Request(request.method, url, headers=headers, content=await request.aread())
        answer = await self._inner.handle_async_request(sent)
        return httpx2.Response(
            answer.status_code, headers=answer.headers, content=await answer.aread()
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class SignInBrowser:
    """A browser in which a person called `user` signs in at the upstream's page."""

    def __init__(self, front: str, user: str) -> None:
        """`front`: the front's loopback URL (`Front.url`)."""
        self.front = front
        self.user = user
        self.cookies = httpx2.Cookies()
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestURLParams), params
        self.asked.append(params.url)
        await self.open(params.url)
        return types.ElicitResult(action="accept")

    async def get(self, url: str) -> httpx2.Response:
        """One page, with this browser's cookies (no redirect followed)."""
        mounts = {f"all://{PUBLIC}": _ToFront(self.front)}
        async with httpx2.AsyncClient(timeout=10, cookies=self.cookies, mounts=mounts) as http:
            answer = await http.get(url)
            self.cookies = http.cookies
            return answer

    async def post(self, url: str, form: dict[str, str]) -> httpx2.Response:
        """A form posted, with this browser's cookies (no redirect followed)."""
        mounts = {f"all://{PUBLIC}": _ToFront(self.front)}
        async with httpx2.AsyncClient(timeout=10, cookies=self.cookies, mounts=mounts) as http:
            answer = await http.post(url, data=form)
            self.cookies = http.cookies
            return answer

    async def start(self, link: str) -> str:
        """Open the sign-in link the router showed and go on: the authorization URL the
        first hop redirects to."""
        page = await self.get(link)
        assert page.status_code == 200, page.text
        go = page.text.split('href="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
        hop = await self.get(f"https://{PUBLIC}{go}")
        assert hop.status_code == 303, hop.text
        return str(hop.headers["location"])

    async def authorize(self, authorization_url: str) -> str:
        """Sign in at the authorization server as `user`: the callback URL it sends back."""
        login = await self.get(authorization_url)  # to its login page
        assert login.status_code == 302, login.text
        back = await self.get(f"{login.headers['location']}&user={self.user}")
        assert back.status_code == 302, back.text
        callback = str(back.headers["location"])
        parts = urlsplit(callback)
        assert parts.netloc == PUBLIC and parts.path == "/oauth/callback", callback
        return callback

    async def open(self, link: str) -> None:
        """Follow the sign-in link through to its end (shown in the host, or named by an
        error), as the person who asked for it."""
        done = await self.get(await self.authorize(await self.start(link)))
        assert done.status_code == 200, done.text
