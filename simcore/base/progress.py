"""Progress of long work: how much is done, how fast, and when it will end."""

from __future__ import annotations

import time
from typing import TextIO


class Progress:
    """`done`/`total` with rate and ETA on `stream`: redrawn in place on a terminal, else a
    line every `interval_s` at most (a log); nothing before `delay_s`. `done` counts what
    was already done at the start; the rate and ETA count only what is done since."""

    def __init__(self, label: str, total: int, unit: str, stream: TextIO, done: int = 0,
                 interval_s: float = 10.0, delay_s: float = 0.0) -> None:
        self.label, self.total, self.unit, self.stream = label, total, unit, stream
        self.first = done
        self.interval_s, self.delay_s = interval_s, delay_s
        self.began = self.last = time.perf_counter()
        self.live = stream.isatty()
        self.shown = False

    def show(self, done: int, detail: str = "") -> None:
        """Report `done` (and `detail` after the count) if it is time to."""
        now = time.perf_counter()
        elapsed = now - self.began
        if elapsed < self.delay_s or (not self.live and now - self.last < self.interval_s):
            return
        self.last = now
        rate = (done - self.first) / max(elapsed, 1e-9)
        eta = (time.strftime("%H:%M:%S", time.gmtime((self.total - done) / rate))
               if rate > 0 else "?")
        line = (f"{self.label}: {done}/{self.total} {self.unit}{detail}, {rate:.1f}/s, "
                f"ETA {eta}")
        print(("\r" + line) if self.live else line, end="" if self.live else "\n",
              file=self.stream, flush=True)
        self.shown = True

    def close(self) -> None:
        """End the line redrawn in place, if any."""
        if self.live and self.shown:
            print(file=self.stream, flush=True)
