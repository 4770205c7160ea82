"""Oracle tests for the KIP-848 server assignors: Kafka's own group coordinator (TargetAssignmentBuilder
with UniformAssignor / RangeAssignor, a ConsumerGroup, a KRaft metadata image; ServerAssignorOracle) and
ours, with the revision `server_assignor_options` picks for that coordinator version, get the same random
group states and must produce the same target assignments, each member's topics and partitions in the same
(Java iteration) order, and fail on the same cases.

Per coordinator version (one JVM each): kafka-group-coordinator 4.4.0 (jar set assignor-oracle, harness
jvm/assignor-oracle/src), SERVER_ORACLE_CASES (default 5000) cases per assignor; 4.3.0, 4.2.0, 4.1.0,
4.0.1, 4.0.0 (jar sets assignor-oracle-server-<version>, harnesses jvm/assignor-oracle-server-4.{0,1,2}/src
for the builder APIs of those releases), SERVER_ORACLE_CASES_OLDER (default 2000) each.
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
    server_assignor_options,
)
from jvm_oracle.harness import ROOT, compile_sources, jar_dir
from tests.oracle.server_random_cases import ServerCase, random_server_case

pytestmark = pytest.mark.oracle

_HARNESS = ROOT / "jvm" / "assignor-oracle" / "src" / "main" / "java"
_HARNESS_40 = ROOT / "jvm" / "assignor-oracle-server-4.0" / "src" / "main" / "java"
_HARNESS_41 = ROOT / "jvm" / "assignor-oracle-server-4.1" / "src" / "main" / "java"
_HARNESS_42 = ROOT / "jvm" / "assignor-oracle-server-4.2" / "src" / "main" / "java"
# coordinator version -> (jar set, harness source dir)
VERSIONS = {
    "4.4.0": ("assignor-oracle", _HARNESS),
    "4.3.0": ("assignor-oracle-server-4.3.0", _HARNESS_42),
    "4.2.0": ("assignor-oracle-server-4.2.0", _HARNESS_42),
    "4.1.0": ("assignor-oracle-server-4.1.0", _HARNESS_41),
    "4.0.1": ("assignor-oracle-server-4.0.1", _HARNESS_40),
    "4.0.0": ("assignor-oracle-server-4.0.0", _HARNESS_40),
}
NEWEST = "4.4.0"
CASES_PER_ASSIGNOR = int(os.environ.get("SERVER_ORACLE_CASES", "5000"))
CASES_PER_ASSIGNOR_OLDER = int(os.environ.get("SERVER_ORACLE_CASES_OLDER", "2000"))
SEED = 20260101
RUNNERS = {"uniform": assign_server_uniform, "range": assign_server_range}
# the revision on the other side of a boundary, which the cases of that version must tell apart from its own
OTHER_REVISION = {
    ("uniform", "4.0.0"): {"extra_slots_to_holders": True},
    ("uniform", "4.0.1"): {"extra_slots_to_holders": False},
}


def _cases_per_assignor(version: str) -> int:
    return CASES_PER_ASSIGNOR if version == NEWEST else CASES_PER_ASSIGNOR_OLDER


def _run_kafka(version: str, cases: dict[int, ServerCase]) -> dict[int, dict[str, Any]]:
    jar_set, harness = VERSIONS[version]
    payload = "\n".join(c.to_json(cid) for cid, c in cases.items()) + "\n"
    classpath = f"{compile_sources(harness, jar_set)}:{jar_dir(jar_set)}/*"
    proc = subprocess.run(
        ["java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx512m", "-cp", classpath,
         "cgh.oracle.ServerAssignorOracle"],
        input=payload, capture_output=True, text=True, timeout=300, check=True,
    )
    results = {}
    for line in proc.stdout.splitlines():
        record = json.loads(line)
        results[int(record["id"])] = record
    return results


OracleRun = tuple[str, dict[int, ServerCase], dict[int, dict[str, Any]]]


@pytest.fixture(scope="module", params=list(VERSIONS))
def oracle_run(request: pytest.FixtureRequest) -> OracleRun:
    version: str = request.param
    jar_set, _ = VERSIONS[version]
    if shutil.which("javac") is None:
        pytest.fail("javac is required for the oracle tests (Java 17 is part of the project's machine)")
    if not any(jar_dir(jar_set).glob("kafka-group-coordinator-*.jar")):
        pytest.fail(f"jar set {jar_set} missing: run scripts/bootstrap --kafka")
    rng = random.Random(SEED + list(VERSIONS).index(version))
    cases: dict[int, ServerCase] = {}
    for a, assignor in enumerate(RUNNERS):
        for k in range(_cases_per_assignor(version)):
            big = k % 50 == 0
            cases[a * 1_000_000 + k] = random_server_case(
                rng, assignor, max_members=40 if big else 10, max_topics=10 if big else 6,
                max_partitions=300 if big else 24,
            )
    return version, cases, _run_kafka(version, cases)


def _ours(case: ServerCase, version: str, **override: Any) -> dict[str, Any]:
    options = server_assignor_options(f"server-{case.assignor}", version) | override
    try:
        result = RUNNERS[case.assignor](case.members, case.topics, **options)
    except AssignorError as e:
        return {"error": str(e)}
    return {"assignment": {m: [[t, ps] for t, ps in tps.items()] for m, tps in result.items()}}


@pytest.mark.parametrize("assignor", list(RUNNERS))
def test_identical_to_kafka(oracle_run: OracleRun, assignor: str) -> None:
    version, cases, java = oracle_run
    checked, java_errors, unsorted_members, mismatches, other_differs = 0, 0, 0, [], 0
    other = OTHER_REVISION.get((assignor, version))
    kinds = {HOMOGENEOUS: 0, HETEROGENEOUS: 0}
    for cid, case in cases.items():
        if case.assignor != assignor:
            continue
        checked += 1
        expected, ours = java[cid], _ours(case, version)
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
        if other is not None and _ours(case, version, **other).get("assignment") != expected["assignment"]:
            other_differs += 1
    assert checked == _cases_per_assignor(version)
    assert not mismatches, (
        f"{len(mismatches)}/{checked} {assignor} cases differ from Kafka {version} "
        f"(first: case {mismatches[0][0]}: java={mismatches[0][1]} ours={mismatches[0][2]})"
    )
    # the comparison must cover both builders and mostly successful assignments
    assert java_errors <= checked // 20
    assert min(kinds.values()) >= checked // 5, kinds
    # and Java's hash order, not a sorted order, must be what is compared
    assert unsorted_members >= checked // 10
    # and around a revision boundary, the cases must tell the two revisions apart
    if other is not None:
        assert other_differs >= checked // 100, (other, other_differs)


