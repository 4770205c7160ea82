"""`pip install .` (no extras) gives a working decoder without Spark.

The project ships one distribution: its hard dependencies are coordinator_core's own (pyarrow, numpy, the codec
libraries, crc32c); Spark, Delta and the report come with the `spark` extra. This test builds a fresh virtual
environment, installs a copy of the project into it as a user would (non-editable, no extras; pip's cache makes
repeat runs quick, a clean machine downloads the wheels from PyPI), and in that environment's own Python decodes
the segments of a captured sample with coordinator_core's public API. The expected counts come from a separate
walk of the segments' v2 batch headers and record framing, written here from Kafka's documented format
(DefaultRecordBatch / DefaultRecord), not from coordinator_core. It also checks that pyspark is absent there.
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "kafka-4.3.1"
#: What `pip install .` reads: the packages, the build configuration, the README it names as `readme`.
PROJECT_FILES = ("pyproject.toml", "README.md", "coordinator_core", "jobs", "schemas")

#: Runs in the fresh environment, isolated (-I: neither the checkout nor PYTHONPATH on sys.path).
DECODE_IN_VENV = r"""
import json, sys
from collections import Counter
import coordinator_core
from coordinator_core import decode_batch, decode_record, read_segment

out = {"core_file": coordinator_core.__file__, "files": {}}
for path in sys.argv[1:]:
    reader = read_segment(path)
    entries = list(reader)
    data = [e for e in entries if not e.is_control and e.key is not None]
    for e in data:
        decode_record(e.key, e.value)  # raises DecodeError on bytes it cannot read
    table = decode_batch([e.key for e in data], [e.value for e in data])
    out["files"][path] = {
        "records": len(entries),
        "control": sum(e.is_control for e in entries),
        "offsets": [e.offset for e in entries],
        "problems": [str(p) for p in reader.problems],
        "errors": sum(x is not None for x in table.column("error").to_pylist()),
        "record_types": dict(Counter(str(t) for t in table.column("record_type").to_pylist())),
    }
try:
    import pyspark  # noqa: F401
    out["pyspark"] = pyspark.__file__
except ImportError:
    out["pyspark"] = None
print(json.dumps(out))
"""


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A zig-zag varint (Kafka's ByteUtils.readVarint/readVarlong)."""
    shift = raw = 0
    while True:
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7


def _walk_segment(path: Path) -> dict[str, object]:
    """Records of one segment by the v2 batch format: header fields at their fixed positions (baseOffset 0,
    batchLength 8, magic 16, attributes 21, recordsCount 57, records from 61), each record's key read through
    its framing to take the key's leading int16 (the record type)."""
    buf = path.read_bytes()
    pos = records = control = 0
    offsets: list[int] = []
    types: Counter[str] = Counter()
    while pos + 12 <= len(buf):
        base_offset, batch_length = struct.unpack_from(">qi", buf, pos)
        end = pos + 12 + batch_length
        assert end <= len(buf), f"{path}: truncated batch at byte {pos}"
        magic = buf[pos + 16]
        attributes, = struct.unpack_from(">h", buf, pos + 21)
        count, = struct.unpack_from(">i", buf, pos + 57)
        assert magic == 2 and attributes & 0x07 == 0, f"{path}: expected uncompressed v2 batches, byte {pos}"
        is_control = bool(attributes & 0x20)
        rpos = pos + 61
        for _ in range(count):
            length, rpos = _varint(buf, rpos)
            record_end = rpos + length
            rpos += 1  # attributes
            _, rpos = _varint(buf, rpos)  # timestampDelta
            offset_delta, rpos = _varint(buf, rpos)
            key_length, rpos = _varint(buf, rpos)
            offsets.append(base_offset + offset_delta)
            if not is_control and key_length >= 2:
                types[str(struct.unpack_from(">h", buf, rpos)[0])] += 1
            rpos = record_end
        assert rpos == end, f"{path}: records of the batch at byte {pos} end at {rpos}, the batch at {end}"
        records += count
        control += count if is_control else 0
        pos = end
    assert pos == len(buf), f"{path}: {len(buf) - pos} bytes after the last batch"
    return {"records": records, "control": control, "offsets": offsets, "record_types": dict(types)}


def test_core_installs_alone_and_decodes_a_sample(tmp_path: Path) -> None:
    segments = sorted(SAMPLE.glob("__consumer_offsets-*/*.log"))
    assert len(segments) == 23, "samples/kafka-4.3.1/README.md lists 23 non-empty segments"
    expected = {str(p): _walk_segment(p) for p in segments}
    assert sum(e["control"] for e in expected.values()) > 0, "the transactions scenario wrote commit/abort markers"
    types = Counter()
    for e in expected.values():
        types.update(e["record_types"])
    assert types["1"] > 0 and types["2"] > 0, f"offset commits and group metadata in the sample: {types}"

    source = tmp_path / "src"
    source.mkdir()
    for name in PROJECT_FILES:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(src, source / name)
    venv = tmp_path / "venv"
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                              str(source)], check=False, capture_output=True, text=True)
    assert install.returncode == 0, f"pip install of the core failed:\n{install.stdout}\n{install.stderr}"
    installed = time.monotonic() - started

    run = subprocess.run([str(python), "-I", "-c", DECODE_IN_VENV, *expected], check=False, capture_output=True,
                         text=True, cwd=tmp_path)
    assert run.returncode == 0, f"decoding in the core-only environment failed:\n{run.stderr}"
    result = json.loads(run.stdout)
    print(f"core-only venv + pip install: {installed:.1f} s")

    assert result["pyspark"] is None, f"pyspark is importable in the core-only environment: {result['pyspark']}"
    assert Path(result["core_file"]).is_relative_to(venv), f"coordinator_core came from {result['core_file']}"
    for path, want in expected.items():
        got = result["files"][path]
        assert got["problems"] == [], f"{path}: {got['problems']}"
        assert got["errors"] == 0, f"{path}: {got['errors']} records did not decode"
        for field in ("records", "control", "offsets", "record_types"):
            assert got[field] == want[field], f"{path}: {field} {got[field]} != {want[field]} by the batch walk"

    # The distribution also installs the `cgh` script; without the spark extra it says what to install.
    tables = tmp_path / "tables"
    tables.mkdir()
    cgh = subprocess.run([str(venv / "bin" / "cgh"), "tables", "--tables", str(tables)], check=False,
                         capture_output=True, text=True, cwd=tmp_path)
    assert cgh.returncode == 2, f"cgh without the spark extra: {cgh.returncode}\n{cgh.stdout}\n{cgh.stderr}"
    assert "pip install 'consumer-group-history[spark]'" in cgh.stderr, cgh.stderr
    assert "Traceback" not in cgh.stderr, cgh.stderr
