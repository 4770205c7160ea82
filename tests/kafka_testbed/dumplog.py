"""Run Kafka's own dump-log tool with its offsets decoder, and parse what it prints.

`kafka-dump-log.sh --offsets-decoder --files a.log,b.log` (the class
`org.apache.kafka.tools.DumpLogSegments` in Kafka 4.x; it was `kafka.tools.DumpLogSegments` in Scala
before) is the referee for coordinator_core's decoding: for every record it prints the offset, the key
and the value as JSON produced by Kafka's generated message classes (`--offsets-decoder`), and for the
ConsumerProtocol it decodes the embedded subscription and assignment too.

Parsing follows the advice of reference/kafka-record-formats.md §7: a record line is found by its
`| offset: N` start; the key is the text after ` key: ` up to the first ` payload: `, the value is the
rest of the line after ` payload: `. Batch lines (`baseOffset: ...`) are read only for the fields whose
names have not changed since 2.2 (base offset, producer id, transactional and control flags), and control
records only for `endTxnMarker` and `coordinatorEpoch`.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .broker import DEFAULT_JAR_SET, java_command, kafka_major

# The tool's class: ported to Java in 4.0 (the 3.x one is the Scala object kafka.tools.DumpLogSegments).
DUMP_LOG_SEGMENTS = {3: "kafka.tools.DumpLogSegments", 4: "org.apache.kafka.tools.DumpLogSegments"}

_DUMPING = re.compile(r"^Dumping (.+)$")
_BATCH = re.compile(r"^baseOffset: (\d+) lastOffset: (\d+) .*?producerId: (-?\d+) producerEpoch: (-?\d+) "
                    r".*?isTransactional: (true|false) isControl: (true|false)")
_RECORD = re.compile(r"^\| offset: (\d+) (CreateTime|LogAppendTime|NoTimestampType): (-?\d+) ")
_CONTROL = re.compile(r" endTxnMarker: (\w+) coordinatorEpoch: (-?\d+)")
_INVALID_TAIL = re.compile(r"^Found (\d+) invalid bytes at the end of (.+)$")


@dataclass(frozen=True)
class DumpedBatch:
    base_offset: int
    last_offset: int
    producer_id: int
    producer_epoch: int
    is_transactional: bool
    is_control: bool


@dataclass(frozen=True)
class DumpedRecord:
    """One record as DumpLogSegments printed it. `key`/`payload` are the raw texts (JSON, `<DELETE>`,
    or a message such as `Unknown record type N at offset O, skipping.`); None when not printed."""

    offset: int
    timestamp_type: str
    timestamp: int
    batch: DumpedBatch
    key: str | None
    payload: str | None
    control_type: str | None = None
    coordinator_epoch: int | None = None


@dataclass
class DumpedFile:
    path: str
    records: list[DumpedRecord] = field(default_factory=list)
    invalid_tail_bytes: int = 0


_JSON = json.JSONDecoder()


def split_key_payload(line: str) -> tuple[str | None, str | None]:
    """The texts after ` key: ` and after the ` payload: ` that follows it.

    A JSON key is read as JSON, so a group or topic name that itself contains " payload: " cannot cut
    it short; any other key text ends at the first ` payload: `.
    """
    key_at = line.find(" key: ")
    if key_at < 0:
        return None, None
    rest = line[key_at + len(" key: "):]
    if rest.startswith("{"):
        try:
            _, end = _JSON.raw_decode(rest)
        except ValueError:
            end = -1
        if end > 0 and rest.startswith(" payload: ", end):
            return rest[:end], rest[end + len(" payload: "):]
    payload_at = rest.find(" payload: ")
    if payload_at < 0:
        return rest, None
    return rest[:payload_at], rest[payload_at + len(" payload: "):]


def parse_dump(text: str) -> dict[str, DumpedFile]:
    """Parse DumpLogSegments output into records per dumped file (keyed by the path it printed)."""
    files: dict[str, DumpedFile] = {}
    current: DumpedFile | None = None
    batch: DumpedBatch | None = None
    for line in text.splitlines():
        dumping = _DUMPING.match(line)
        if dumping:
            current = files.setdefault(dumping.group(1), DumpedFile(dumping.group(1)))
            batch = None
            continue
        if current is None:
            continue
        batch_match = _BATCH.match(line)
        if batch_match:
            base, last, pid, epoch, txn, ctl = batch_match.groups()
            batch = DumpedBatch(int(base), int(last), int(pid), int(epoch), txn == "true", ctl == "true")
            continue
        record = _RECORD.match(line)
        if record:
            if batch is None:
                raise ValueError(f"record line before any batch line: {line[:200]}")
            control = _CONTROL.search(line)
            key, payload = (None, None) if control else split_key_payload(line)
            current.records.append(DumpedRecord(
                offset=int(record.group(1)), timestamp_type=record.group(2), timestamp=int(record.group(3)),
                batch=batch, key=key, payload=payload,
                control_type=control.group(1) if control else None,
                coordinator_epoch=int(control.group(2)) if control else None,
            ))
            continue
        invalid = _INVALID_TAIL.match(line)
        if invalid:
            current.invalid_tail_bytes = int(invalid.group(1))
    return files


def dump_segments(paths: Iterable[Path], timeout: float = 300,
                  jar_set: str = DEFAULT_JAR_SET) -> dict[Path, DumpedFile]:
    """Run DumpLogSegments --offsets-decoder once over all `paths`; results keyed by the given paths."""
    paths = [Path(p).resolve() for p in paths]
    if not paths:
        return {}
    main_class = DUMP_LOG_SEGMENTS[min(4, kafka_major(jar_set))]
    cmd = java_command(main_class, "--offsets-decoder", "--files", ",".join(map(str, paths)),
                       jvm_options=("-Dlog4j2.level=WARN",), jar_set=jar_set)
    done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"DumpLogSegments failed ({done.returncode}): {done.stderr[-3000:]}")
    parsed = parse_dump(done.stdout)
    out: dict[Path, DumpedFile] = {}
    for path in paths:
        dumped = parsed.get(str(path))
        if dumped is None:
            raise RuntimeError(f"DumpLogSegments printed nothing for {path}")
        out[path] = dumped
    return out
