"""The REST side of the one door (`router.server.access.authorization`): a dependency of every REST
route, which checks the route's rule and sets its `Access` for the handler; `?endpoint=NAME`
serves the route as that endpoint (`router.endpoints`)."""

from __future__ import annotations

import dataclasses

from fastapi import Request

from router.core.errors import HttpRefusal
from router.server.access.authorization import (
    ANONYMOUS,
    OPERATOR,
    REST_RULES,
    Access,
    access_for,
    enter,
)
from router.server.access.endpoint import enter_endpoint
from router.server.lifecycle.state import RouterState


async def authorize_rest(request: Request) -> Access:
    """The route's rule checked, its `Access` set for the handler (FastAPI awaits a
    dependency in the request's own task, then the handler, so the handler's context holds
    it; each request runs in a fresh copy of the context). A route without a rule is 404."""
    route = request.scope.get("route")
    path = getattr(route, "path", None)
    rule = REST_RULES.get(path) if isinstance(path, str) else None
    if rule is None:
        raise HttpRefusal(404, "no such route")
    state: RouterState = request.scope["state"]["router"]
    endpoint = request.query_params.get("endpoint")
    if endpoint is not None:  # `?endpoint=NAME`: served as that endpoint (router.endpoints)
        known = state.config_settings.endpoints
        if endpoint not in known:
            names = ", ".join(sorted(known)) or "none"
            raise HttpRefusal(404, f"no endpoint {endpoint!r} (router.endpoints: {names})")
        enter_endpoint(endpoint)
    access = access_for(state.settings.visibility, operator_token=bool(request.scope.get(OPERATOR)))
    if request.scope.get(ANONYMOUS) and not request.scope.get(OPERATOR):
        access = dataclasses.replace(access, operator=False)  # nobody showed a credential
    if rule == "operator" and not access.operator:
        raise HttpRefusal(403, "this needs an operator (router.operators) or the operator token")
    enter(access)
    return access
