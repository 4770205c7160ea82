"""Oracle tests: Kafka's own assignor classes (pinned kafka-clients, one JVM per version) and ours get the
same randomized inputs and must produce identical assignments, list order included.

Each (jar set, assignor) pair runs CASES_PER_ASSIGNOR seeded random cases (override with the environment
variable ASSIGNOR_ORACLE_CASES). All cases of one Kafka version go through a single JVM, started once per
test session.
"""

from __future__ import annotations

import os
import random
import shutil
from typing import Any

import pytest

from coordinator_core.assignors import AssignorError, assign
from tests.oracle.assignor_jvm import JAR_SETS, case_json, jars_available, run_batch
from tests.oracle.random_cases import Case, random_case

pytestmark = pytest.mark.oracle

ASSIGNORS = ["range", "roundrobin", "sticky", "cooperative-sticky"]
CASES_PER_ASSIGNOR = int(os.environ.get("ASSIGNOR_ORACLE_CASES", "2500"))
SEED = 20240607


def _cases(jar_set: str) -> dict[int, Case]:
    rng = random.Random(f"{SEED}-{jar_set}")
    cases: dict[int, Case] = {}
    for a, assignor in enumerate(ASSIGNORS):
        for k in range(CASES_PER_ASSIGNOR):
            big = k % 50 == 0
            cases[a * 1_000_000 + k] = random_case(
                rng, assignor,
                # every 50th case is large; 20 topics push the HashMaps of topics past a resize (> 12 keys)
                max_members=30 if big else 10, max_topics=20 if big else 5, max_partitions=40 if big else 12,
            )
    return cases


@pytest.fixture(scope="session", params=list(JAR_SETS), ids=list(JAR_SETS.values()))
def oracle_run(request: pytest.FixtureRequest) -> tuple[str, dict[int, Case], dict[int, dict[str, Any]]]:
    jar_set = request.param
    if shutil.which("javac") is None:
        pytest.fail("javac is required for the oracle tests (Java 17 is part of the project's machine)")
    if not jars_available(jar_set):
        pytest.fail(f"jar set {jar_set} missing: run scripts/bootstrap --kafka")
    cases = _cases(jar_set)
    lines = (
        case_json(cid, c.assignor, c.partitions_per_topic, c.members, c.brokers, c.replicas)
        for cid, c in cases.items()
    )
    return jar_set, cases, run_batch(jar_set, lines)


def _ours(case: Case, version: str) -> dict[str, Any]:
    try:
        result = assign(case.assignor, case.partitions_per_topic, case.members, kafka_version=version,
                        partition_racks=case.partition_racks())
    except AssignorError as e:
        return {"error": str(e)}
    return {"assignment": {m: [list(tp) for tp in ps] for m, ps in result.items()}}


@pytest.mark.parametrize("assignor", ASSIGNORS)
def test_identical_to_kafka(oracle_run: tuple[str, dict[int, Case], dict[int, dict[str, Any]]],
                            assignor: str) -> None:
    jar_set, cases, java = oracle_run
    version = JAR_SETS[jar_set]
    checked, mismatches = 0, []
    java_errors = 0
    for cid, case in cases.items():
        if case.assignor != assignor:
            continue
        expected = java[cid]
        ours = _ours(case, version)
        checked += 1
        if "error" in expected:
            java_errors += 1
            if "error" not in ours:
                mismatches.append((cid, expected["error"], ours))
        elif ours.get("assignment") != expected["assignment"]:
            mismatches.append((cid, expected["assignment"], ours))
    assert checked == CASES_PER_ASSIGNOR
    assert not mismatches, (
        f"{len(mismatches)}/{checked} {assignor} cases differ from Kafka {version} "
        f"(first: case {mismatches[0][0]}: java={mismatches[0][1]} ours={mismatches[0][2]})"
    )
    # Kafka's classes must mostly succeed, or the comparison would prove little
    assert java_errors <= checked // 20
