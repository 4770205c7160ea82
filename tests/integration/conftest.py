"""Fixtures for tests against a real Kafka broker and against the sample it produced.

* `kafka_broker` (package): one single-node KRaft broker from the Maven Central jars, started once and
  stopped when the integration tests end, also when tests fail or the run is interrupted (the fixture's
  `finally`, plus the broker module's atexit hook and the kernel's parent-death signal).
* `live_run` (package): every scenario of tests/kafka_testbed/scenarios.py run once against that broker,
  then a snapshot copy of the `__consumer_offsets` segments it wrote (taken while the broker keeps
  running: segments closed by a roll and the active one).
* `sample` (parametrized over SAMPLE_JAR_SETS): a committed sample captured from the Kafka release of a
  jar set (samples/kafka-<version>: 4.x from jvm/kafka, 3.x from jvm/kafka-3), so the oracle also runs
  on data that does not depend on this machine's broker, and on a 3.x broker's data without starting one.

The jar set comes from `scripts/bootstrap --kafka` (which scripts/test runs); without it these tests
fail with a message that says so, rather than skip.
"""

from __future__ import annotations

import json
import shutil
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.kafka_testbed.broker import ROOT, KafkaBroker, kafka_version
from tests.kafka_testbed.scenarios import ScenarioError, run_scenarios


@dataclass
class LiveRun:
    broker: KafkaBroker
    scenarios: dict[str, Any]        # the document capture writes as scenarios.json
    segments_dir: Path               # snapshot: <dir>/__consumer_offsets-N/<base>.log
    client_log_dir: Path


@pytest.fixture(scope="package")
def kafka_broker() -> Iterator[KafkaBroker]:
    """One broker for the integration tests, stopped when they end (not when the whole session does: the
    Spark tests after them need the cores and memory)."""
    broker = KafkaBroker()
    try:
        broker.start()
        yield broker
    finally:
        broker.cleanup()


@pytest.fixture(scope="package")
def live_run(kafka_broker: KafkaBroker, tmp_path_factory: pytest.TempPathFactory,
             request: pytest.FixtureRequest) -> LiveRun:
    client_log_dir = tmp_path_factory.mktemp("clients")
    try:
        document = run_scenarios(kafka_broker.bootstrap_servers, client_log_dir)
    except ScenarioError as first_failure:
        # The scenarios drive real clients against real timeouts (6-10 s sessions, 2 s poll intervals);
        # on an overloaded machine a client can miss reporting a short-lived generation. That is the test
        # bed's timing, not the code under test: run everything once more on a fresh broker (the groups
        # of the failed attempt would otherwise pollute the histories), and fail if it happens again.
        warnings.warn(f"scenario run failed, retrying once on a fresh broker: {first_failure}", stacklevel=1)
        kafka_broker = KafkaBroker()
        request.addfinalizer(kafka_broker.cleanup)
        kafka_broker.start()
        client_log_dir = tmp_path_factory.mktemp("clients-retry")
        document = run_scenarios(kafka_broker.bootstrap_servers, client_log_dir)
    snapshot = tmp_path_factory.mktemp("segments")
    for segment in kafka_broker.consumer_offsets_segments(with_data_only=True):
        target = snapshot / segment.parent.name / segment.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(segment, target)
    return LiveRun(kafka_broker, document, snapshot, client_log_dir)


SAMPLE_JAR_SETS = ["kafka", "kafka-3"]


@dataclass
class Sample:
    jar_set: str
    path: Path
    scenarios: dict[str, Any]


def load_sample(jar_set: str) -> Sample:
    path = ROOT / "samples" / f"kafka-{kafka_version(jar_set)}"
    if not (path / "scenarios.json").is_file():
        pytest.fail(f"no committed sample for the Kafka release of jar set {jar_set}: {path} "
                    f"(python -m tests.kafka_testbed.capture --jar-set {jar_set} writes it)")
    return Sample(jar_set, path, json.loads((path / "scenarios.json").read_text()))


@pytest.fixture(scope="session", params=SAMPLE_JAR_SETS)
def sample(request: pytest.FixtureRequest) -> Sample:
    return load_sample(request.param)

