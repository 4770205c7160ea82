"""Run Kafka's own assignor classes (a pinned kafka-clients) on a batch of cases in one JVM.

The harness source is jvm/assignor-oracle/src/main/java (kafka-clients 2.4+, `ConsumerPartitionAssignor`)
or jvm/assignor-oracle-legacy/src/main/java (0.9-2.3, the older `PartitionAssignor` interface); it is
compiled with javac into the machine's oracle-classes cache (`harness.classes_cache`) the first time it is
needed, against the jar set that `scripts/bootstrap --kafka` fetched into .cache/jars/<jar set>/ (see
scripts/fetch_jars.py).
"""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from coordinator_core.assignors import MemberSubscription
from jvm_oracle.harness import ROOT, compile_sources, jar_dir

SOURCE_DIR = ROOT / "jvm" / "assignor-oracle" / "src" / "main" / "java"
LEGACY_SOURCE_DIR = ROOT / "jvm" / "assignor-oracle-legacy" / "src" / "main" / "java"

# jar set name -> the Kafka version it pins (the newest first)
JAR_SETS: dict[str, str] = {
    "assignor-oracle": "4.4.0",
    "assignor-oracle-3.7.0": "3.7.0",
    "assignor-oracle-3.5.1": "3.5.1",
    "assignor-oracle-3.4.1": "3.4.1",
    "assignor-oracle-3.3.2": "3.3.2",
    "assignor-oracle-2.8.2": "2.8.2",
    "assignor-oracle-2.6.3": "2.6.3",
    "assignor-oracle-2.5.0": "2.5.0",
    "assignor-oracle-2.3.1": "2.3.1",
    "assignor-oracle-2.2.2": "2.2.2",
    "assignor-oracle-2.0.1": "2.0.1",
    "assignor-oracle-0.11.0.3": "0.11.0.3",
    "assignor-oracle-0.9.0.1": "0.9.0.1",
}


def _legacy(jar_set: str) -> bool:
    """kafka-clients before 2.4 only has the old `internals.PartitionAssignor` interface."""
    major, minor = (int(x) for x in JAR_SETS[jar_set].split(".")[:2])
    return (major, minor) < (2, 4)


def jars_available(jar_set: str) -> bool:
    return any(jar_dir(jar_set).glob("kafka-clients-*.jar"))


def classpath(jar_set: str) -> str:
    source_dir = LEGACY_SOURCE_DIR if _legacy(jar_set) else SOURCE_DIR
    return f"{compile_sources(source_dir, jar_set)}:{jar_dir(jar_set)}/*"


def case_json(
    case_id: int,
    assignor: str,
    partitions_per_topic: Mapping[str, int],
    members: Sequence[MemberSubscription],
    brokers: Sequence[tuple[int, str | None]] = (),
    replicas: Mapping[str, Sequence[Sequence[int]]] | None = None,
) -> str:
    return json.dumps(
        {
            "id": case_id,
            "assignor": assignor,
            "topics": dict(partitions_per_topic),
            "brokers": [list(b) for b in brokers],
            "replicas": replicas,
            "members": [
                {
                    "id": m.member_id,
                    "topics": list(m.topics),
                    "user_data": None if m.user_data is None else base64.b64encode(m.user_data).decode(),
                    "owned": [list(tp) for tp in m.owned_partitions],
                    "generation": m.generation,
                    "instance": m.group_instance_id,
                    "rack": m.rack_id,
                }
                for m in members
            ],
        }
    )


def run_batch(jar_set: str, case_lines: Iterable[str], timeout: float = 600) -> dict[int, dict[str, Any]]:
    """Feed every case to one JVM; returns case id -> {"assignment": {...}} or {"error": "..."}."""
    payload = "\n".join(case_lines) + "\n"
    proc = subprocess.run(
        ["java", "-Xss8m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", classpath(jar_set),
         "cgh.oracle.LegacyClientAssignorOracle" if _legacy(jar_set) else "cgh.oracle.ClientAssignorOracle"],
        input=payload,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )
    results: dict[int, dict[str, Any]] = {}
    for line in proc.stdout.splitlines():
        record = json.loads(line)
        results[int(record["id"])] = record
    return results
