"""The audit trail as OpenTelemetry log records too (`router.audit.otel`), beside its file.

Each line the trail writes is also emitted, once it is on disk, as one log record (the line
its body, event `mcp_router.audit`) through an SDK `LoggerProvider` of its own, so the
router's ordinary log never carries the trail. The exporters are `OTEL_LOGS_EXPORTER`'s
(`otlp`, the default, or `console`, which writes to stderr: in stdio mode stdout carries the
protocol). Needs the `otel` extra; without it the trail is written to its file alone, and
that is logged.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

AUDIT_LOGGER = "mcp_router.audit"
EXPORTERS_VARIABLE = "OTEL_LOGS_EXPORTER"
EXTRA_HINT = "pip install 'mcp-router[otel]'"

logger = logging.getLogger(__name__)


def exporters_from_env(environ: Mapping[str, str] | None = None) -> list[Any]:
    env = os.environ if environ is None else environ
    names = [n.strip() for n in env.get(EXPORTERS_VARIABLE, "otlp").split(",") if n.strip()]
    found = []
    for name in names:
        if name == "console":
            from opentelemetry.sdk._logs.export import ConsoleLogRecordExporter

            found.append(ConsoleLogRecordExporter(out=sys.stderr))
        elif name == "otlp":
            try:
                from opentelemetry.exporter.otlp.proto.http._log_exporter import (
                    OTLPLogExporter,
                )
            except ImportError:
                logger.warning(
                    "audit: %s=otlp needs the OTLP exporter: %s", EXPORTERS_VARIABLE, EXTRA_HINT
                )
                continue
            found.append(OTLPLogExporter())  # OTEL_EXPORTER_OTLP_(LOGS_)ENDPOINT, headers, ...
        elif name != "none":
            logger.warning(
                "audit: %s: unknown exporter %r (use otlp or console)", EXPORTERS_VARIABLE, name
            )
    return found


_providers: list[Any] = []
_loggers: list[Any] = []


def export_audit_logs(exporters: Sequence[Any] | None = None) -> bool:
    """Emit the trail's lines as OTel log records through `exporters` (by default
    `OTEL_LOGS_EXPORTER`'s); whether any now listens."""
    try:
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
        from opentelemetry.sdk.resources import Resource
    except ImportError:
        logger.warning("router.audit.otel needs the otel extra: %s", EXTRA_HINT)
        return False
    chosen = list(exporters_from_env() if exporters is None else exporters)
    if not chosen:
        return False
    provider = LoggerProvider(resource=Resource.create({"service.name": "mcp-router"}))
    for exporter in chosen:
        provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
    _providers.append(provider)
    _loggers.append(provider.get_logger(AUDIT_LOGGER))
    return True


def emit(line: str) -> None:
    """One written line, to the OTel exporters if any listen."""
    if not _loggers:
        return
    from opentelemetry._logs import SeverityNumber

    for otel_logger in _loggers:
        otel_logger.emit(
            body=line,
            severity_number=SeverityNumber.INFO,
            severity_text="INFO",
            event_name=AUDIT_LOGGER,
        )


def flush() -> None:
    for provider in _providers:
        provider.force_flush()


def stop() -> None:
    """No more exporting (the providers shut down)."""
    for provider in _providers:
        provider.shutdown()
    _providers.clear()
    _loggers.clear()
