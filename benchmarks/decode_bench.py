"""Benchmark coordinator_core's decoders: records/s of decode_record and decode_batch on realistic
`__consumer_offsets` traffic, and read_segment's throughput and peak memory on a large segment file.

    .venv/bin/python -m benchmarks.decode_bench [--records 1000000] [--segment-mb 512]

The input is the synthetic fleet's steady-state traffic (see `realistic_records`), encoded with
coordinator_core's own encoders; the segment is written with kafka-python's batch builder. Figures are
single-threaded and use process CPU time (time.process_time), so a busy machine slows the run but changes
the figures less; the 1-minute load average is printed with each decode_batch figure because a shared
CPU still moves them (caches, frequency).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import coordinator_core as cc


def realistic_records(n: int, seed: int = 7) -> tuple[list[bytes], list[bytes | None]]:
    """`n` data records of the synthetic fleet (jobs.synthetic_fleet, the project's model of a real fleet),
    in the order the decode stage receives them: one `__consumer_offsets` partition after another, in
    offset order, control records (transaction markers) left out as jobs.decode does.

    Each partition is read from offset 50,000 on, past the fleet's start where every group writes its
    first GroupMetadata, so the window is steady-state traffic: offset commits of value versions 1/3/4 in
    commit batches of a group's partitions (each key repeats several times per 10k rows), with a few
    rebalances (GroupMetadata, KIP-848, share-group records), tombstones, corrupt and unknown records in
    almost every 10k-row batch.
    """
    from jobs.synthetic_fleet import FleetSpec, generate_partition

    spec = FleetSpec(seed=seed)
    warm_up, per_partition = 50_000, -(-n // 10)
    keys: list[bytes] = []
    values: list[bytes | None] = []
    partition = 0
    while len(keys) < n:
        for batch in generate_partition(spec, partition, warm_up, warm_up + per_partition, "bench", 0):
            cols = batch.select(["key", "value", "is_control"]).to_pydict()
            for key, value, is_control in zip(cols["key"], cols["value"], cols["is_control"], strict=True):
                if not is_control:
                    keys.append(key)
                    values.append(value)
        partition += 1
    return keys[:n], values[:n]


def bench_decode_record(keys: list[bytes], values: list[bytes | None]) -> float:
    decode = cc.decode_record
    start = time.process_time()
    for k, v in zip(keys, values, strict=False):
        try:  # noqa: SIM105 - a with-block per record would be timed with the decode
            decode(k, v)
        except cc.DecodeError:  # the fleet's few corrupt records, as the decode stage sees them
            pass
    return len(keys) / (time.process_time() - start)


def bench_decode_batch(keys: list[bytes], values: list[bytes | None], passes: int = 5) -> float:
    """Records/s of decode_batch: the median of `passes` passes over all records (each pass a single
    figure), printed with the slowest and fastest pass and the load average."""
    import statistics

    import pyarrow as pa

    karr = pa.array(keys, pa.binary())
    varr = pa.array(values, pa.binary())
    cc.decode_batch(karr.slice(0, 1000), varr.slice(0, 1000))  # warm the compiled codecs

    def per_10k() -> float:
        # Spark hands the decoder Arrow batches of 10,000 rows by default.
        start = time.process_time()
        for i in range(0, len(keys), 10_000):
            cc.decode_batch(karr.slice(i, 10_000), varr.slice(i, 10_000))
        return len(keys) / (time.process_time() - start)

    def whole() -> float:
        start = time.process_time()
        cc.decode_batch(karr, varr)
        return len(keys) / (time.process_time() - start)

    medians = []
    for shape, run in (("in 10k-row batches", per_10k), ("as one array      ", whole)):
        load_before = os.getloadavg()[0]
        figures = sorted(run() for _ in range(passes))
        medians.append(statistics.median(figures))
        print(
            f"decode_batch   : {medians[-1]:>12,.0f} records/s {shape} (median of {passes} passes, "
            f"{figures[0]:,.0f}-{figures[-1]:,.0f}; 1-min load average {load_before:.2f} before, "
            f"{os.getloadavg()[0]:.2f} after)"
        )
    return medians[0]


def write_segment(path: str, keys: list[bytes], values: list[bytes | None], target_bytes: int) -> int:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    written = 0
    offset = 0
    with open(path, "wb") as f:
        while written < target_bytes:
            for i in range(0, len(keys), 200):
                bb = DefaultRecordBatchBuilder(
                    magic=2,
                    compression_type=0,
                    is_transactional=False,
                    producer_id=-1,
                    producer_epoch=-1,
                    base_sequence=-1,
                    batch_size=1 << 22,
                )
                for j in range(i, min(i + 200, len(keys))):
                    bb.append(j - i, timestamp=1_760_000_000_000 + j, key=keys[j], value=values[j], headers=[])
                buf = bytearray(bb.build())
                buf[0:8] = offset.to_bytes(8, "big")
                offset += min(200, len(keys) - i)
                f.write(buf)
                written += len(buf)
                if written >= target_bytes:
                    break
    return offset


_READ_ONE = """
import resource, sys, time
import coordinator_core as cc
start = time.process_time()
reader = cc.read_segment(sys.argv[1])
count = sum(1 for _ in reader)
elapsed = time.process_time() - start
print(count, elapsed, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, len(reader.problems))
"""


def bench_read_segment(keys: list[bytes], values: list[bytes | None], megabytes: int) -> None:
    """Read segments of two sizes, each in a fresh interpreter, so its peak RSS is the reader's own."""
    with tempfile.TemporaryDirectory() as d:
        for size_mb in (megabytes // 8, megabytes):
            path = os.path.join(d, f"{size_mb}.log")
            n = write_segment(path, keys[:200_000], values[:200_000], size_mb << 20)
            out = subprocess.run([sys.executable, "-c", _READ_ONE, path], capture_output=True, text=True, check=True)
            count_s, elapsed_s, maxrss_kib, problems = out.stdout.split()
            count, elapsed = int(count_s), float(elapsed_s)
            assert count == n and problems == "0", (count, n, problems)
            mb_per_s = os.path.getsize(path) / elapsed / 1e6
            print(
                f"read_segment   : {size_mb:>5} MiB file, {count:,} records, {count / elapsed:,.0f} records/s, "
                f"{mb_per_s:,.0f} MB/s, peak RSS of the reading process {int(maxrss_kib) / 1024:,.1f} MiB"
            )
            os.remove(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--segment-mb", type=int, default=512)
    ap.add_argument("--passes", type=int, default=5, help="decode_batch passes over the records (median shown)")
    args = ap.parse_args(argv)
    print(f"building {args.records:,} realistic records ...", file=sys.stderr)
    keys, values = realistic_records(args.records)
    print(f"decode_record  : {bench_decode_record(keys, values):>12,.0f} records/s")
    bench_decode_batch(keys, values, args.passes)
    if args.segment_mb:
        bench_read_segment(keys, values, args.segment_mb)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
