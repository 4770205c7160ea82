"""Oracle tests for the KIP-848 server assignors: Kafka 4.4's own group coordinator (TargetAssignmentBuilder
with UniformAssignor / RangeAssignor, a ConsumerGroup, a KRaft metadata image; jvm/assignor-oracle's
ServerAssignorOracle) and ours get the same random group states and must produce the same target
assignments, each member's topics and partitions in the same (Java iteration) order, and fail on the same
cases. SERVER_ORACLE_CASES (default 5000) cases per assignor, all through one JVM.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from typing import Any

import pytest

from coordinator_core.assignors import (
    HETEROGENEOUS,
    HOMOGENEOUS,
    AssignorError,
    assign_server_range,
    assign_server_uniform,
)
from tests.oracle.assignor_jvm import classpath, jars_available
from tests.oracle.server_random_cases import ServerCase, random_server_case

pytestmark = pytest.mark.oracle

JAR_SET = "assignor-oracle"  # kafka-group-coordinator 4.4.0
CASES_PER_ASSIGNOR = int(os.environ.get("SERVER_ORACLE_CASES", "5000"))
SEED = 20260101
RUNNERS = {"uniform": assign_server_uniform, "range": assign_server_range}


def _run_kafka(cases: dict[int, ServerCase]) -> dict[int, dict[str, Any]]:
    payload = "\n".join(c.to_json(cid) for cid, c in cases.items()) + "\n"
    proc = subprocess.run(
        ["java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx512m", "-cp", classpath(JAR_SET),
         "cgh.oracle.ServerAssignorOracle"],
        input=payload, capture_output=True, text=True, timeout=300, check=True,
    )
    results = {}
    for line in proc.stdout.splitlines():
        record = json.loads(line)
        results[int(record["id"])] = record
    return results


@pytest.fixture(scope="module")
def oracle_run() -> tuple[dict[int, ServerCase], dict[int, dict[str, Any]]]:
    if shutil.which("javac") is None:
        pytest.fail("javac is required for the oracle tests (Java 17 is part of the project's machine)")
    if not jars_available(JAR_SET):
        pytest.fail(f"jar set {JAR_SET} missing: run scripts/bootstrap --kafka")
    rng = random.Random(SEED)
    cases: dict[int, ServerCase] = {}
    for a, assignor in enumerate(RUNNERS):
        for k in range(CASES_PER_ASSIGNOR):
            big = k % 50 == 0
            cases[a * 1_000_000 + k] = random_server_case(
                rng, assignor, max_members=40 if big else 10, max_topics=10 if big else 6,
                max_partitions=300 if big else 24,
            )
    return cases, _run_kafka(cases)


def _ours(case: ServerCase) -> dict[str, Any]:
    try:
        result = RUNNERS[case.assignor](case.members, case.topics)
    except AssignorError as e:
        return {"error": str(e)}
    return {"assignment": {m: [[t, ps] for t, ps in tps.items()] for m, tps in result.items()}}


@pytest.mark.parametrize("assignor", list(RUNNERS))
def test_identical_to_kafka(oracle_run: tuple[dict[int, ServerCase], dict[int, dict[str, Any]]],
                            assignor: str) -> None:
    cases, java = oracle_run
    checked, java_errors, unsorted_members, mismatches = 0, 0, 0, []
    kinds = {HOMOGENEOUS: 0, HETEROGENEOUS: 0}
    for cid, case in cases.items():
        if case.assignor != assignor:
            continue
        checked += 1
        expected, ours = java[cid], _ours(case)
        if "error" in expected:
            java_errors += 1
            if "error" not in ours:
                mismatches.append((cid, expected["error"], ours))
            continue
        kinds[expected["subscription_type"]] += 1
        unsorted_members += sum(
            1 for topics in expected["assignment"].values()
            if any(ps != sorted(ps) for _, ps in topics) or [t for t, _ in topics] != sorted(t for t, _ in topics)
        )
        if ours.get("assignment") != expected["assignment"]:
            mismatches.append((cid, expected["assignment"], ours))
    assert checked == CASES_PER_ASSIGNOR
    assert not mismatches, (
        f"{len(mismatches)}/{checked} {assignor} cases differ from Kafka 4.4.0 "
        f"(first: case {mismatches[0][0]}: java={mismatches[0][1]} ours={mismatches[0][2]})"
    )
    # the comparison must cover both builders and mostly successful assignments
    assert java_errors <= checked // 20
    assert min(kinds.values()) >= checked // 5, kinds
    # and Java's hash order, not a sorted order, must be what is compared
    assert unsorted_members >= checked // 10

