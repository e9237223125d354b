"""OpenTelemetry tracing: the router's spans, and the SDK set up from the standard variables.

The MCP SDK does the protocol part itself: every request a host sends is handled inside a
server span that continues the W3C trace context of its `_meta` (`traceparent`,
`tracestate`), and every request the router sends upstream carries the current context in
its own `_meta` (`mcp.server._otel`, `mcp.shared._otel`). The router adds a span for each
search and each forwarded call in between, so one trace runs host -> router -> upstream.

Without the `otel` extra (`opentelemetry-sdk`) the API is a no-op that still passes a host's
trace context on to upstreams. With it, `configure_from_env` installs a tracer provider when
`OTEL_TRACES_EXPORTER` names an exporter (`otlp`, `console`), unless `OTEL_SDK_DISABLED` is
true or a provider is already installed (`opentelemetry-instrument mcp-router ...`).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, StatusCode

from router import __version__

logger = logging.getLogger(__name__)

EXPORTERS_VARIABLE = "OTEL_TRACES_EXPORTER"
DISABLED_VARIABLE = "OTEL_SDK_DISABLED"
SERVICE_NAME = "mcp-router"
EXTRA_HINT = "pip install 'mcp-router[otel]'"

_tracer = trace.get_tracer("mcp-router", __version__)


@contextmanager
def span(name: str, attributes: Mapping[str, Any] | None = None) -> Iterator[Span]:
    """A span under the current one (the host's request, continued from its `_meta`); an
    exception out of it marks it failed."""
    with _tracer.start_as_current_span(name, attributes=dict(attributes or {})) as current:
        yield current


def failed(current: Span, description: str) -> None:
    """Mark `current` failed without an exception (an `isError` result, an upstream error
    turned into one)."""
    current.set_status(StatusCode.ERROR, description)


def configure_from_env(environ: Mapping[str, str] | None = None) -> bool:
    """Install an SDK tracer provider as the variables say; whether one now exports spans
    (`False` when tracing is off, the extra is missing, or another provider was installed).
    """
    env = os.environ if environ is None else environ
    names = [
        n.strip()
        for n in env.get(EXPORTERS_VARIABLE, "").split(",")
        if n.strip() not in ("", "none")
    ]
    if not names or env.get(DISABLED_VARIABLE, "").strip().lower() == "true":
        return False
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
    except ImportError:
        logger.warning(
            "%s is set but tracing needs the otel extra: %s", EXPORTERS_VARIABLE, EXTRA_HINT
        )
        return False
    if isinstance(trace.get_tracer_provider(), TracerProvider):
        return False  # set up already, by opentelemetry-instrument or the embedding program
    exporters: list[SpanExporter] = []
    for name in names:
        exporter = _exporter(name)
        if exporter is not None:
            exporters.append(exporter)
    if not exporters:
        return False
    attributes = {} if env.get("OTEL_SERVICE_NAME") else {"service.name": SERVICE_NAME}
    provider = TracerProvider(resource=Resource.create(attributes))
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    logger.info("tracing on: spans go to %s", ", ".join(names))
    return True


def _exporter(name: str) -> Any:
    """The SDK exporter `name` stands for, or None (logged) for one that is not there."""
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        # stderr: in stdio mode stdout carries the protocol
        return ConsoleSpanExporter(out=sys.stderr)
    if name == "otlp":
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            logger.warning("%s=otlp needs the OTLP exporter: %s", EXPORTERS_VARIABLE, EXTRA_HINT)
            return None
        return OTLPSpanExporter()  # OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, headers, ...
    logger.warning("%s: unknown exporter %r (use otlp or console)", EXPORTERS_VARIABLE, name)
    return None
