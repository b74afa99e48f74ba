"""Progress of a league: a live bar on a terminal, a few plain lines otherwise (logs, CI)."""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Any, TextIO


class Progress:
    """Counts finished episodes; ``tqdm`` when ``stream`` is a terminal, else plain lines.

    Plain mode prints a line at every tenth of the work (and at least every 10 s), so a log
    shows the rate and the time left without a line per episode.
    """

    def __init__(self, total: int, stream: TextIO | None = None, desc: str = "league") -> None:
        # None: no stream to write to (Python gives None for a closed stderr), so be silent
        self.stream: TextIO | None = stream if stream is not None else sys.stderr
        self.total, self.done, self.desc = total, 0, desc
        self.start = self._last = time.perf_counter()
        self._next = self._step = max(1, -(-total // 10))
        self._bar: Any = None
        if total > 0 and self.stream is not None and _isatty(self.stream):
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=desc, unit="ep", file=self.stream,
                             dynamic_ncols=True, smoothing=0.1)

    def update(self, n: int = 1) -> None:
        """Count ``n`` more. Progress is for a reader: when the reader has gone (a closed pipe),
        it stops being written, and the work goes on."""
        self.done += n
        try:
            self._show(n)
        except (OSError, ValueError):  # BrokenPipeError, or a stream closed under us
            self._bar, self.stream = None, None

    def _show(self, n: int) -> None:
        if self._bar is not None:
            self._bar.update(n)
            return
        if self.stream is None:
            return
        now = time.perf_counter()
        if self.done >= self._next or self.done == self.total or now - self._last >= 10:
            while self._next <= self.done:
                self._next += self._step
            self._last = now
            elapsed = now - self.start
            rate = self.done / elapsed if elapsed > 0 else 0.0
            eta = (self.total - self.done) / rate if rate > 0 else 0.0
            print(f"{self.desc}: {self.done}/{self.total} episodes, {rate:.1f} episodes/s, "
                  f"eta {eta:.0f} s", file=self.stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            bar, self._bar = self._bar, None
            with contextlib.suppress(OSError, ValueError):  # the reader has gone
                bar.close()


def note(message: str) -> None:
    """A line for the person running the command, on stderr; dropped when no one reads it (a
    closed stderr, or a pipe whose reader left): a note never stops the work."""
    if sys.stderr is None:
        return
    with contextlib.suppress(OSError, ValueError):
        print(message, file=sys.stderr, flush=True)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
