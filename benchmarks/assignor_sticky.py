"""Sticky assignor at 1,000 members x 10,000 partitions: our time and Kafka's Java class, same input, same run.

Two scenarios, both with equal subscriptions (the constrained path every real group of one application
takes): a fresh group (nobody owns anything) and a rebalance after churn (the previous assignment owned by
the members, 5% of members replaced by new ones, generations set). Java runs in one JVM (kafka-clients of
the `assignor-oracle` jar set, fetched by `scripts/bootstrap --kafka`) with warm-up runs first, so its
figure is JIT-compiled steady state; each run includes building the inputs (Cluster, Subscriptions), as
ours includes decoding the user data. The Java result is also compared with ours.

Usage: .venv/bin/python benchmarks/assignor_sticky.py [--members 1000] [--partitions 10000] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coordinator_core.assignors import MemberSubscription, assign  # noqa: E402
from coordinator_core.assignors.userdata import encode_sticky_user_data  # noqa: E402
from jvm_oracle.assignors import case_json, classpath  # noqa: E402


def scenario(members: int, partitions: int, churn: bool, seed: int = 7) -> list[MemberSubscription]:
    rng = random.Random(seed)
    topics = [f"topic-{t:02d}" for t in range(10)]
    ids = [f"consumer-app-{i}-{rng.getrandbits(64):016x}" for i in range(members)]
    if not churn:
        return [MemberSubscription(m, topics) for m in ids]
    per_topic = partitions // len(topics)
    all_partitions = [(t, p) for t in topics for p in range(per_topic)]
    owned: dict[str, list[tuple[str, int]]] = {m: [] for m in ids}
    for k, tp in enumerate(all_partitions):
        owned[ids[k % members]].append(tp)
    replaced = set(rng.sample(ids, members // 20))
    result = []
    for m in ids:
        if m in replaced:
            result.append(MemberSubscription(m + "-new", topics))
        else:
            result.append(MemberSubscription(m, topics, encode_sticky_user_data(owned[m], 41), generation=41))
    rng.shuffle(result)
    return result


def time_ours(counts: dict[str, int], members: list[MemberSubscription], runs: int) -> tuple[list[float], dict]:
    times = []
    result: dict = {}
    for _ in range(runs):
        start = time.perf_counter()
        result = assign("sticky", counts, members)
        times.append(time.perf_counter() - start)
    return times, result


def time_java(counts: dict[str, int], members: list[MemberSubscription], warmup: int, runs: int) -> list[float]:
    line = case_json(0, "sticky", counts, members)
    proc = subprocess.run(
        ["java", "-cp", classpath("assignor-oracle"), "cgh.oracle.AssignorTiming", str(warmup), str(runs)],
        input=line + "\n", capture_output=True, text=True, check=True,
    )
    return [n / 1e9 for n in json.loads(proc.stdout)["nanos"]]


def java_result(counts: dict[str, int], members: list[MemberSubscription]) -> dict:
    line = case_json(0, "sticky", counts, members)
    proc = subprocess.run(
        ["java", "-cp", classpath("assignor-oracle"), "cgh.oracle.ClientAssignorOracle"],
        input=line + "\n", capture_output=True, text=True, check=True,
    )
    return dict(json.loads(proc.stdout)["assignment"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--members", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args(argv)
    counts = {f"topic-{t:02d}": args.partitions // 10 for t in range(10)}
    worst = 0.0
    for name, churn in (("fresh", False), ("churn-5%", True)):
        members = scenario(args.members, args.partitions, churn)
        ours_times, ours = time_ours(counts, members, args.runs)
        java_times = time_java(counts, members, args.warmup, args.runs)
        same = {m: [list(tp) for tp in ps] for m, ps in ours.items()} == java_result(counts, members)
        o, j = statistics.median(ours_times), statistics.median(java_times)
        worst = max(worst, o / j)
        print(f"sticky {args.members} members x {args.partitions} partitions [{name}]: "
              f"ours {o * 1000:.1f} ms, Kafka (Java, warm) {j * 1000:.1f} ms, ratio {o / j:.2f}x, "
              f"identical assignment: {same}")
    print(f"worst ratio {worst:.2f}x (target: within 3x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
