"""A real Apache Kafka broker for the tests, assembled from the Maven Central jars in .cache/jars/kafka.

Hand-built bytes only prove that we read the spec the way we understood it; the bytes and log lines a
real broker writes prove that we read Kafka. This package starts a single-node KRaft broker on loopback
(:mod:`.broker`), drives consumer groups through known histories with real clients (:mod:`.scenarios`),
runs Kafka's own dump-log tool as the decoding oracle (:mod:`.dumplog`) and copies the result into a
committed sample (:mod:`.capture`).
"""

from __future__ import annotations
