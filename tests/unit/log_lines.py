"""Log lines written by hand for the logs tests (a broker's and a client's, mixed with a stack trace and
carriage returns), and how the tests write them: the expected values of those tests are read off these
lines, never computed by the code under test."""

from __future__ import annotations

import gzip
from pathlib import Path

M1 = "consumer-orders-svc-1-1a2b3c4d-0000-4e5f-8a9b-0123456789ab"
M2 = "consumer-orders-svc-2-5e6f7a8b-1111-4c2d-9e8f-fedcba987654"
GC = "(kafka.coordinator.group.GroupCoordinator)"
NGMM = "(org.apache.kafka.coordinator.group.GroupMetadataManager)"
CC = "(org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)"

# Broker 1 writes local time in Europe/Berlin (CEST, UTC+2 in June).
BROKER_LINES = [
    "[2024-06-01 10:00:00,000] INFO Registered kafka:type=kafka.Log4jController MBean"
    " (kafka.utils.Log4jControllerRegistration$)",
    "[2024-06-01 10:00:01,003] INFO [GroupCoordinator 1]: Member " + M2 + " in group orders-svc has failed,"
    " removing it from the group " + GC,
    "[2024-06-01 10:00:01,004] INFO [GroupCoordinator 1]: Preparing to rebalance group orders-svc in state"
    " PreparingRebalance with old generation 6 (__consumer_offsets-12) (reason: removing member " + M2
    + " on heartbeat expiration) " + GC,
    "[2024-06-01 10:00:02,000] WARN [ReplicaFetcher replicaId=1, leaderId=2, fetcherId=0] Error in response"
    " (kafka.server.ReplicaFetcherThread)",
    "org.apache.kafka.common.errors.DisconnectException",
    "\tat org.apache.kafka.clients.NetworkClient.poll(NetworkClient.java:123)",
    "[2024-06-01 10:00:04,010] INFO [GroupCoordinator 1]: Stabilized group orders-svc generation 7"
    " (__consumer_offsets-12) with 2 members " + GC,
    "[2024-06-01 10:00:05,000] INFO [GroupCoordinator 1]: Frobnicated group orders-svc beyond repair " + GC,
    "[2024-06-01 10:00:06,000] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=12] Stabilized"
    " group billing generation 3 with 1 members. " + NGMM,
]
CLIENT_LINES = [
    "[2024-06-01 08:00:04,070] INFO [Consumer clientId=consumer-orders-svc-1, groupId=orders-svc] Successfully"
    " joined group with generation Generation{generationId=7, memberId='" + M1 + "', protocol='range'} " + CC,
    "[2024-06-01 08:00:04,080] INFO [Consumer clientId=consumer-orders-svc-1, groupId=orders-svc] Subscribed to"
    " topic(s): orders (org.apache.kafka.clients.consumer.KafkaConsumer)",
    "[2024-06-01 08:00:05,501] INFO [Consumer clientId=consumer-orders-svc-1, groupId=orders-svc] Request"
    " joining group due to: group is already rebalancing " + CC,
]

MIXED_LINES = [
    "continuation before any head",
    *BROKER_LINES,
    "[2024-06-01 10:00:07,000] ERROR boom (kafka.server.KafkaApis)\r",
    *[f"\tat frame{i}" for i in range(40)],
    "Caused by: java.lang.IllegalStateException: x\r",
    *CLIENT_LINES,
]


def write_lines(path: Path, lines: list[str], mode: str = "w") -> None:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, mode + "t", encoding="utf-8", newline="") as handle:
        handle.write("".join(line + "\n" for line in lines))
