"""DAPHNE's logging configuration (`"logging"` in the user config, DAPHNE's doc/development/Logging.md).

The user config lists loggers and an optional global limit:

    "logging": [
        {"log-level-limit": "info"},
        {"name": "default", "filename": "daphne.log", "level": "debug", "format": "[%n] %l: %v"},
        {"name": "compiler", "filename": "", "level": "debug", "format": "%v"}
    ]

Each logger writes its messages of at least its `level` (spdlog's names: trace, debug, info, warn, err, critical,
off) and at least the limit, to stderr and, when `filename` is not empty, also to that file (DAPHNE writes to
stdout; daphnec keeps stdout for the script's output). `format` is an spdlog pattern; daphnec understands its
common flags: `%v` message, `%n` logger name, `%l` level, `%L` its first letter, `%Y %m %d %H %M %S %e` date and
time (milliseconds), `%t` thread id, `%%`; colour marks `%^ %$` are dropped.

daphnec's loggers (DAPHNE's names where it has them): `default` (the run: program cache hits, compiling, executing,
each with its seconds), `compiler` (each pass and its milliseconds), `runtime` (native kernels compiled or loaded).
Nothing is set up, and Python's `logging` is not even imported, unless the config names a logger: a run without
logging pays one attribute test per event.
"""

from __future__ import annotations

import sys
from typing import Any

_LEVELS = {"trace": 5, "debug": 10, "info": 20, "warn": 30, "warning": 30, "err": 40, "error": 40,
           "critical": 50, "off": 100}  # fmt: skip
"""spdlog's level names as Python logging levels (trace below DEBUG, off above everything)."""

_LOGGERS: dict[str, Any] = {}
"""Configured loggers by DAPHNE name (empty: logging is off)."""

_CONFIGURED: list[object] = [None]


def configure(loggers: list[dict[str, str]], limit: str) -> None:
    """Set up the loggers a user config lists (once per config: the Python API runs many programs)."""
    key = (tuple(tuple(sorted(e.items())) for e in loggers), limit)
    if _CONFIGURED[0] == key:
        return
    _CONFIGURED[0] = key
    for logger in _LOGGERS.values():
        for h in list(logger.handlers):
            logger.removeHandler(h)
            h.close()
    _LOGGERS.clear()
    if not loggers:
        return
    import logging

    logging.addLevelName(5, "TRACE")
    floor = _LEVELS.get(limit.lower(), 100) if limit else 0
    for entry in loggers:
        name = entry["name"]
        logger = logging.getLogger(f"daphnec.{name}")
        logger.propagate = False
        logger.setLevel(max(_LEVELS.get(entry["level"].lower(), 100), floor))
        formatter = _SpdlogFormatter(entry.get("format") or "[%n] [%l] %v", name)
        handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
        if entry.get("filename"):
            handlers.append(logging.FileHandler(entry["filename"], encoding="utf-8"))
        for h in handlers:
            h.setFormatter(formatter)
            logger.addHandler(h)
        _LOGGERS[name] = logger


def log(name: str, level: str, message: str) -> None:
    """Log `message` on DAPHNE's logger `name` (falling back to `default`, as DAPHNE's fallback loggers do)."""
    logger = _LOGGERS.get(name) or _LOGGERS.get("default")
    if logger is not None:
        logger.log(_LEVELS[level], message)


def enabled() -> bool:
    """Whether any logger is configured (callers skip building messages otherwise)."""
    return bool(_LOGGERS)


class _SpdlogFormatter:
    """An spdlog pattern as a `logging.Formatter` (the flags listed in the module docstring)."""

    _SPDLOG_LEVEL = {5: "trace", 10: "debug", 20: "info", 30: "warning", 40: "error", 50: "critical"}

    def __init__(self, pattern: str, name: str):
        self.pattern = pattern
        self.name = name

    def format(self, record: Any) -> str:
        import time

        lt = time.localtime(record.created)
        level = self._SPDLOG_LEVEL.get(record.levelno, record.levelname.lower())
        values = {
            "v": record.getMessage(), "n": self.name, "l": level, "L": level[:1].upper(),
            "Y": f"{lt.tm_year:04d}", "m": f"{lt.tm_mon:02d}", "d": f"{lt.tm_mday:02d}", "H": f"{lt.tm_hour:02d}",
            "M": f"{lt.tm_min:02d}", "S": f"{lt.tm_sec:02d}", "e": f"{int(record.msecs):03d}",
            "t": str(record.thread), "%": "%", "^": "", "$": "",
        }  # fmt: skip
        out, i, p = [], 0, self.pattern
        while i < len(p):
            if p[i] == "%" and i + 1 < len(p):
                out.append(values.get(p[i + 1], p[i : i + 2]))
                i += 2
            else:
                out.append(p[i])
                i += 1
        return "".join(out)
