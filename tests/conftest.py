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


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist's controller: keep what a finished worker reported of its Spark JVMs."""
    started = getattr(node, "workeroutput", {}).get("spark_jvms_started_for")
    if started is not None:
        node.config.stash.setdefault(SPARK_JVMS_STARTED_FOR, {})[node.gateway.id] = started


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """One line per test process: how many Spark driver JVMs it started, and for which module."""
    for process, modules in sorted(config.stash.get(SPARK_JVMS_STARTED_FOR, {}).items()):
        if modules:
            terminalreporter.write_line(f"Spark driver JVMs started by {process}: {len(modules)} "
                                        f"({', '.join(modules)})")
