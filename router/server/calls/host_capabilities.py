"""What a host must have declared to be asked an upstream's request: sampling (with tools),
elicitation in form or URL mode, roots (`router.server.calls.relay` refuses the request for
the upstream, naming the capability, rather than send it to a host that cannot answer)."""

from __future__ import annotations

import mcp_types as types

from router.upstream.connection.host_requests import HostRequest


def missing_capability(caps: types.ClientCapabilities | None, request: HostRequest) -> str | None:
    """The capability the host would need for `request` and did not declare, if any."""
    if isinstance(request, types.CreateMessageRequest):
        sampling = caps.sampling if caps else None
        if sampling is None:
            return "sampling"
        if request.params.tools and sampling.tools is None:
            return "sampling.tools"
        return None
    if isinstance(request, types.ElicitRequest):
        elicitation = caps.elicitation if caps else None
        if elicitation is None:
            return "elicitation"
        if isinstance(request.params, types.ElicitRequestURLParams):
            return "elicitation.url" if elicitation.url is None else None
        # `elicitation: {}` means form mode, as does `form`; only `url` alone excludes it
        if elicitation.form is None and elicitation.url is not None:
            return "elicitation.form"
        return None
    return "roots" if caps is None or caps.roots is None else None
