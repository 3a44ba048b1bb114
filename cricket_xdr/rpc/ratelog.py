"""Log lines for conditions that may recur many times a second (a full descriptor table,
a flood of refused connections): at most one line per interval, with how many were left out."""

from __future__ import annotations

import logging
import threading
import time

__all__ = ["RateLimitedLog"]


class RateLimitedLog:
    """`log(level, msg, *args)` writes to `logger` at most once per `interval` seconds; the
    next line written says how many were suppressed since the last one."""

    def __init__(self, logger: logging.Logger, interval: float = 10.0) -> None:
        self.logger = logger
        self.interval = interval
        self._next = 0.0
        self._suppressed = 0
        self._lock = threading.Lock()

    def log(self, level: int, msg: str, *args: object) -> None:
        now = time.monotonic()
        with self._lock:
            if now < self._next:
                self._suppressed += 1
                return
            suppressed, self._suppressed = self._suppressed, 0
            self._next = now + self.interval
        if suppressed:
            msg += " (%d more like it since the last such line)"
            args += (suppressed,)
        self.logger.log(level, msg, *args)
