"""Progress lines on stderr while a job runs: the job's own, one line each.

Spark's console progress bars are off by default (`[spark] show_progress`): they redraw one line with
carriage returns, which in a log file (a scheduler's capture) runs into the job's lines. Instead, while a
stage runs longer than `WATCH_EVERY_SECONDS`, `watching` prints what Spark is doing in the job's format:
the tasks done of the running Spark stages, their rate, and an ETA once a rate is known. Each stage's
last line gives its records and rate (jobs/nightly.py).
"""

from __future__ import annotations

import datetime as dt
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def log(message: str) -> None:
    print(f"[nightly {dt.datetime.now(dt.timezone.utc):%H:%M:%S}] {message}", file=sys.stderr, flush=True)


@contextmanager
def step(name: str) -> Iterator[None]:
    """Log a step's start and its duration."""
    t0 = time.monotonic()
    log(f"  {name} ...")
    yield
    log(f"  {name}: {time.monotonic() - t0:.1f}s")


#: A stage quieter than this prints no progress line of its own (most stages of a nightly run take seconds).
WATCH_EVERY_SECONDS = 15.0


def tasks_line(name: str, elapsed: float, done: int, total: int, rate: float | None) -> str:
    """One progress line: `name: 42s, Spark tasks 30/80 (1.5/s), ETA 33s`. The rate is that of the running
    Spark stages since the previous line; no rate and ETA until one is known."""
    line = f"  {name}: {elapsed:.0f}s, Spark tasks {done}/{total}"
    if rate:
        line += f" ({rate:.1f}/s), ETA {max(0.0, (total - done) / rate):.0f}s"
    return line


def _active_tasks(tracker: Any, seen: dict[int, tuple[float, int]]) -> tuple[int, int, float | None]:
    """Tasks done and total of the Spark stages running now, and their tasks per second since each stage was
    first seen (None before any of them finished a task since then)."""
    done = total = 0
    finished_since = 0
    seconds = 0.0
    now = time.monotonic()
    for stage_id in tracker.getActiveStageIds():
        info = tracker.getStageInfo(stage_id)
        if info is None:
            continue
        done += info.numCompletedTasks
        total += info.numTasks
        first_at, first_done = seen.setdefault(stage_id, (now, info.numCompletedTasks))
        finished_since += info.numCompletedTasks - first_done
        seconds = max(seconds, now - first_at)
    return done, total, (finished_since / seconds if finished_since and seconds > 0 else None)


@contextmanager
def watching(spark_context: Any, name: str, every: float = WATCH_EVERY_SECONDS) -> Iterator[None]:
    """While the block runs, every `every` seconds one line on the Spark work under way (see the module
    docstring). A thread of the driver polls Spark's status tracker; nothing is printed for a short block."""
    stop = threading.Event()
    t0 = time.monotonic()

    def watch() -> None:
        tracker = spark_context.statusTracker()
        seen: dict[int, tuple[float, int]] = {}
        while not stop.wait(every):
            try:
                done, total, rate = _active_tasks(tracker, seen)
            except Exception:  # noqa: BLE001 - a progress line is never worth failing or stopping a run for
                return
            if total:
                log(tasks_line(name, time.monotonic() - t0, done, total, rate))
            else:
                log(f"  {name}: {time.monotonic() - t0:.0f}s (driver work, no Spark tasks running)")

    thread = threading.Thread(target=watch, name=f"progress-{name}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)
