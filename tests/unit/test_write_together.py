"""write_together: independent table writes run at the same time; a failure surfaces after all have ended."""

from __future__ import annotations

import threading
import time

import pytest

from jobs.common.delta_io import write_together


def test_writes_run_at_the_same_time() -> None:
    # Each write waits for the other: one after another, the first would time out at the barrier.
    barrier = threading.Barrier(2, timeout=10)
    done: list[str] = []

    def write(name: str) -> None:
        barrier.wait()
        done.append(name)

    write_together([lambda: write("a"), lambda: write("b")])
    assert sorted(done) == ["a", "b"]


def test_first_failure_is_raised_once_every_write_has_ended() -> None:
    ended: list[str] = []

    def failing() -> None:
        raise RuntimeError("commit conflict on table x")

    def slow() -> None:
        time.sleep(0.3)
        ended.append("slow")

    with pytest.raises(RuntimeError, match="commit conflict on table x"):
        write_together([failing, slow])
    assert ended == ["slow"]  # not left running behind the caller


def test_a_single_write_runs_on_the_calling_thread() -> None:
    threads: list[threading.Thread] = []
    write_together([lambda: threads.append(threading.current_thread())])
    assert threads == [threading.current_thread()]
