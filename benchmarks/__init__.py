"""Benchmarks: each prints its figures, then the 1-minute load average (a figure means little without it) and
one JSON line with everything (`print_closing`)."""

from __future__ import annotations

import json
import os
from typing import Any


def print_closing(figures: dict[str, Any]) -> None:
    """The load average line, then `figures` with it as one JSON line."""
    load = os.getloadavg()[0]
    print(f"\nload average (1 min): {load:.2f}")
    print(json.dumps({**figures, "load1": load}))
