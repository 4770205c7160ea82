"""How the suite splits across pytest-xdist workers (`scripts/test` runs two, one per core).

A worker takes whole units, never single tests: every test module is one unit (its module-scoped Spark
driver starts once, on one worker), and the whole of `tests/integration` is one unit, because its Kafka
broker and the scenarios run against it are package-scoped (two workers would each start a broker and
replay every scenario). Units are handed out longest first (a scheduler of our own), so the long property
and crash tests do not start last and leave one core idle at the end. Without xdist (`-p no:xdist`, or
`-n 0`) nothing changes.

With three workers or more (`scripts/test` runs three on two cores), the last one is the *waiter*: it takes
only the units that spend most of their time waiting on real Kafka clients and brokers (WAITING: session
timeouts, rebalance delays, the one-minute offset retention), and the others never take them. Those units
kept a core's worker idle for minutes (tests/integration alone: 186 s of wall time for 77 CPU-s), while the
Spark units, which use their core all the time, waited their turn.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

#: Units that take minutes (CI durations), handed out first; every other unit follows in collection order.
#: xdist hands each worker two units at the start, alternately: the first worker's first unit builds the
#: shared sample warehouse (tests/spark/sample_warehouse.py), the second worker's first unit does not need it
#: (it would wait, its core idle, while the first builds it on one task slot).
LONGEST_FIRST = (
    "tests/spark/test_crash_drills.py",
    "tests/spark/test_gold_splits.py",
    "tests/spark/test_incremental_runs.py",
    "tests/integration",
    "tests/spark/test_maintenance.py",
    "tests/cluster/test_standalone_cluster.py",
    "tests/spark/test_console_and_outputs.py",
    "tests/spark/test_broker_logs_only.py",
    "tests/cli/test_cli.py",
)

#: Units that mostly wait (see the module's docstring): the waiter worker's, when there is one.
WAITING = ("tests/integration",)

#: Per test process (an xdist worker's id, or "this process"), the test modules that started a Spark driver
#: JVM (tests/spark/conftest.py): printed at the end of the run, as each start costs a cold JIT.
SPARK_JVMS_STARTED_FOR = pytest.StashKey[dict[str, list[str]]]()
#: Per worker (controller side), when its units ran: see `pytest_terminal_summary`.
WORKER_TIMELINES = pytest.StashKey[dict[str, dict[str, Any]]]()
#: Per worker (worker side): the session's start and, per unit, [first start, last end, seconds in tests].
_TIMELINE = pytest.StashKey[dict[str, Any]]()


def _unit(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    return "tests/integration" if path.startswith("tests/integration/") else path


def _rank(unit: str) -> int:
    return LONGEST_FIRST.index(unit) if unit in LONGEST_FIRST else len(LONGEST_FIRST)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist: one `xdist_group` per unit (read by `--dist loadgroup`)."""
    if not hasattr(config, "workerinput"):  # only xdist's workers collect; a plain run is left as it is
        return
    for item in items:
        item.add_marker(pytest.mark.xdist_group(_unit(item.nodeid)))


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadgroup`, handing out the longest units first (tests/xdist_schedule.py)."""
    if config.getoption("dist") != "loadgroup":
        return None
    from tests.xdist_schedule import LongestFirst

    return LongestFirst(config, log)


def pytest_sessionstart(session: pytest.Session) -> None:
    if hasattr(session.config, "workerinput"):
        session.config.stash[_TIMELINE] = {"started": time.time(), "units": {}}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """An xdist worker: when each unit ran, and how long its tests took (set-up and teardown included)."""
    timeline = item.config.stash.get(_TIMELINE, None)
    started = time.time()
    yield
    if timeline is not None:
        span = timeline["units"].setdefault(_unit(item.nodeid), [started, started, 0.0])
        span[1] = time.time()
        span[2] += span[1] - started


def pytest_sessionfinish(session: pytest.Session) -> None:
    timeline = session.config.stash.get(_TIMELINE, None)
    if timeline is not None and hasattr(session.config, "workeroutput"):
        session.config.workeroutput["timeline"] = {**timeline, "finished": time.time()}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist's controller: keep what a finished worker reported of its Spark JVMs and of its timeline."""
    output = getattr(node, "workeroutput", {})
    started = output.get("spark_jvms_started_for")
    if started is not None:
        node.config.stash.setdefault(SPARK_JVMS_STARTED_FOR, {})[node.gateway.id] = started
    if output.get("timeline") is not None:
        node.config.stash.setdefault(WORKER_TIMELINES, {})[node.gateway.id] = output["timeline"]


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """One line per test process: how many Spark driver JVMs it started, and for which module. Under xdist, one
    line per worker: when it finished (seconds after the first worker started) and how long its tests took,
    with its last units (a worker that finishes long before another shows where the split can improve)."""
    for process, modules in sorted(config.stash.get(SPARK_JVMS_STARTED_FOR, {}).items()):
        if modules:
            terminalreporter.write_line(f"Spark driver JVMs started by {process}: {len(modules)} "
                                        f"({', '.join(modules)})")
    timelines = config.stash.get(WORKER_TIMELINES, {})
    if timelines:
        t0 = min(t["started"] for t in timelines.values())
        for worker, t in sorted(timelines.items()):
            units = sorted(t["units"].items(), key=lambda u: u[1][1])
            last = ", ".join(f"{name} {span[0] - t0:.0f}-{span[1] - t0:.0f} s" for name, span in units[-3:])
            terminalreporter.write_line(
                f"{worker}: finished at {t['finished'] - t0:.0f} s, {sum(s[2] for _, s in units):.0f} s in "
                f"{len(units)} units; last: {last}")
