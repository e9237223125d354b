"""`--log-format json`: one JSON object per log record, one a line, for log collectors.

Each line holds `time` (UTC, ISO 8601, milliseconds), `level`, `logger` and `message`, then
any fields passed with `extra=` and, for a failure, `exception` (the formatted traceback).
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

# What every LogRecord carries; anything else on a record came from `extra=`.
# `color_message` is uvicorn's copy of the message with terminal colours.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
    "color_message",
}


class JsonFormatter(logging.Formatter):
    """Formats a record as one line of JSON."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and key not in entry:
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, default=str, ensure_ascii=False)
