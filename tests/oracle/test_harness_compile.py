"""jvm_oracle.harness.compile_sources when several threads of one process ask for the same cold harness at
once, as the rebalance-cost test bed does when it starts its Java clients side by side (ci_full57: eight
errors, `FileExistsError` on a staging directory that the threads of one process shared by its pid)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from jvm_oracle.harness import compile_sources

pytestmark = pytest.mark.oracle

THREADS = 4


def test_threads_compile_a_cold_harness_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "oracle-classes"
    monkeypatch.setenv("CGH_ORACLE_CACHE", str(cache))
    source_dir = tmp_path / "jvm" / "race-probe" / "src" / "main" / "java"
    (source_dir / "probe").mkdir(parents=True)
    (source_dir / "probe" / "Probe.java").write_text(
        "package probe;\npublic final class Probe { public static int answer() { return 42; } }\n")

    start = threading.Barrier(THREADS)
    results: list[Path] = []
    failures: list[BaseException] = []

    def compile_once() -> None:
        start.wait()
        try:
            results.append(compile_sources(source_dir, "kafka"))
        except BaseException as failure:  # noqa: BLE001 - every thread's failure is reported below
            failures.append(failure)

    threads = [threading.Thread(target=compile_once) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == []
    assert len(results) == THREADS and len(set(results)) == 1
    classes = results[0]
    assert classes.parent == cache and classes.name.startswith("race-probe-") and classes.name.endswith("-kafka")
    assert (classes / ".compiled").is_file()
    assert (classes / "probe" / "Probe.class").is_file()
    assert sorted(p.name for p in cache.iterdir()) == [classes.name]  # no staging directory left behind
