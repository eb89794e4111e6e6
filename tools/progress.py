"""The command line's progress line: where a long run is, on a terminal only (issue 25).

A script that computes for minutes printed nothing until it ended. When stderr is a terminal and the run has taken
`PROGRESS_AFTER` seconds (5), a background thread shows one line on stderr, rewritten in place twice a second:

    [daphnec] 12.5 s  running script.daph:14:9

the statement the script is executing (the innermost line of generated host code on the main thread's stack, mapped
back to its DaphneDSL location, so inside a loop it is the loop body's statement) and the time since the run
started. The line is erased when the run ends, and before anything the script prints to the same terminal
(`sys.stdout` is wrapped while the line is shown), so the script's own output is unchanged. Into a pipe or a
file (stderr not a terminal) nothing is ever written: logs and tests see exactly the script's output.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

PROGRESS_AFTER = 5.0
"""Seconds of running before the line appears (a shorter run shows nothing)."""
INTERVAL = 0.5
"""Seconds between updates of the line."""
_ERASE = "\r\x1b[K"


class ProgressLine:
    """The progress line of one run (see the module docstring); `start()` before the run, `stop()` after it."""

    def __init__(self, where: Callable[[], str | None], stream: TextIO, after: float = PROGRESS_AFTER):
        self.where = where
        self.stream = stream
        self.after = after
        self.lock = threading.Lock()
        self.shown = False
        self.at_line_start = True  # whether the script's output so far ends a line (never draw inside one)
        self.t0 = time.perf_counter()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._stdout: Any = None

    def start(self) -> None:
        # the erasing stdout goes in here, on the main thread before the run: swapped in by the drawing thread
        # when the line first shows, a `print` that had fetched the old stream just before wrote after the line
        self._stdout = sys.stdout
        self._wrapper = _ErasingStdout(self._stdout, self)
        sys.stdout = self._wrapper  # type: ignore[assignment]
        self._thread = threading.Thread(target=self._loop, name="daphnec-progress", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        with self.lock:
            self._hide()
            if self._stdout is not None and sys.stdout is self._wrapper:
                sys.stdout = self._stdout

    def _loop(self) -> None:
        if self._done.wait(self.after):
            return
        while True:
            self._draw()
            if self._done.wait(INTERVAL):
                return

    def _draw(self) -> None:
        try:
            where = self.where()
        except Exception:  # noqa: BLE001 - a progress line must never disturb the run
            where = None
        text = f"[daphnec] {time.perf_counter() - self.t0:.1f} s  " + (f"running {where}" if where else "running")
        width = _columns(self.stream)
        with self.lock:
            if self._done.is_set() or not self.at_line_start:
                return
            try:
                self.stream.write(_ERASE + text[: width - 1])
                self.stream.flush()
                self.shown = True
            except (OSError, ValueError):
                pass

    def _hide(self) -> None:
        """Erase the line (the caller holds the lock)."""
        if self.shown:
            try:
                self.stream.write(_ERASE)
                self.stream.flush()
            except (OSError, ValueError):
                pass
            self.shown = False


class _ErasingStdout:
    """`sys.stdout` while the line is shown: erases it before the script's output reaches the terminal."""

    def __init__(self, inner: TextIO, line: ProgressLine):
        self._inner = inner
        self._line = line

    def write(self, s: str) -> int:
        with self._line.lock:
            self._line._hide()
            n = self._inner.write(s)
            if s:
                self._line.at_line_start = s.endswith("\n")
            return n

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _columns(stream: TextIO) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return 80


def main_thread_position(line_locs: list[Any], host_filename: str) -> Callable[[], str | None]:
    """A function naming the DaphneDSL statement the main thread executes now (`file:line:col`), from the
    innermost frame of generated host code (`host_filename`) and its line's source location (`line_locs`)."""
    ident = threading.main_thread().ident

    def where() -> str | None:
        frame = sys._current_frames().get(ident)  # type: ignore[arg-type]
        while frame is not None and frame.f_code.co_filename != host_filename:
            frame = frame.f_back
        if frame is None or not 0 < frame.f_lineno <= len(line_locs):
            return None
        loc = line_locs[frame.f_lineno - 1]
        return str(loc) if loc is not None else None

    return where


def progress_line(line_locs: list[Any], host_filename: str) -> ProgressLine | None:
    """The progress line of a command-line run, or None when stderr is not a terminal."""
    stream = sys.stderr
    try:
        if not stream.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    from daphnec.runtime.testing_hooks import progress_after

    return ProgressLine(main_thread_position(line_locs, host_filename), stream, progress_after(PROGRESS_AFTER))
