"""Progress lines on stderr while a job runs (Spark's own console progress bar shows the tasks)."""

from __future__ import annotations

import datetime as dt
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager


def log(message: str) -> None:
    print(f"[nightly {dt.datetime.now(dt.timezone.utc):%H:%M:%S}] {message}", file=sys.stderr, flush=True)


@contextmanager
def step(name: str) -> Iterator[None]:
    """Log a step's start and its duration."""
    t0 = time.monotonic()
    log(f"  {name} ...")
    yield
    log(f"  {name}: {time.monotonic() - t0:.1f}s")
