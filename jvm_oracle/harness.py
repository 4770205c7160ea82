"""Compile and run the project's small Java oracle harnesses against a jar set fetched from Maven Central.

A harness lives in jvm/<name>/src/main/java; the jar set is the Maven closure that `scripts/bootstrap
--kafka` copied into .cache/jars/<jar set>/ (scripts/fetch_jars.py). Classes are compiled with javac once
per (sources, jar set) and reused, by every checkout on the machine (see `classes_cache`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Threads of one process (a test bed starting several Java clients at once) compile a harness once: the
# first holds the lock while javac runs, the others then find its classes.
_COMPILING = threading.Lock()


def jar_dir(jar_set: str) -> Path:
    return ROOT / ".cache" / "jars" / jar_set


def classes_cache() -> Path:
    """Where compiled harness classes are kept: $CGH_ORACLE_CACHE, else ~/.cache/consumer-group-history/
    oracle-classes, beside the jar sets' cache (scripts/fetch_jars.py) and outside the checkout, so that a
    clean clone (CI's) does not compile them again (~3 s of javac per harness and Kafka version, tens of
    CPU-seconds per clean run). A directory's name holds the hash of its sources and of the jar set's file
    names (their versions): checkouts of other versions never share one."""
    default = Path.home() / ".cache" / "consumer-group-history" / "oracle-classes"
    return Path(os.environ.get("CGH_ORACLE_CACHE") or default)


def compile_sources(source_dir: Path, jar_set: str) -> Path:
    """javac every .java file under `source_dir` against the jar set; returns the classes directory."""
    if not any(jar_dir(jar_set).glob("*.jar")):
        raise FileNotFoundError(
            f"jar set {jar_set!r} is missing from {jar_dir(jar_set)}; run scripts/bootstrap --kafka first")
    sources = [p for p in sorted(source_dir.rglob("*.java")) if _jars_present(p, jar_set)]
    if not sources:
        raise FileNotFoundError(f"no Java sources under {source_dir}")
    jars = sorted(p.name for p in jar_dir(jar_set).glob("*.jar"))
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources) + "\n".join(jars).encode()).hexdigest()[:16]
    out = classes_cache() / f"{source_dir.parts[-4]}-{digest}-{jar_set}"
    if (out / ".compiled").is_file():
        return out
    with _COMPILING:
        if not (out / ".compiled").is_file():
            _compile_into(out, sources, jar_set)
    return out


def _compile_into(out: Path, sources: list[Path], jar_set: str) -> None:
    """Compiled into a staging directory of its own beside the target and renamed into place: two test
    workers (pytest-xdist processes) may compile the same harness at once, and neither may see the other's
    half-written classes. The staging name is unique (mkdtemp), never derived from the pid: a directory left
    by a killed compile may carry a pid that a later process is given again."""
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        subprocess.run(["javac", "-nowarn", "-d", str(staging), "-cp", f"{jar_dir(jar_set)}/*",
                        *map(str, sources)], check=True, capture_output=True)
        (staging / ".compiled").touch()
        if (out / ".compiled").is_file():  # the other worker finished first: its classes are the same
            return
        shutil.rmtree(out, ignore_errors=True)  # a directory left by a compile that died half-way
        with contextlib.suppress(OSError):  # renamed into place by the other worker between the check and here
            staging.rename(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


REQUIRES_MARKER = "// oracle jar set requires: "


def _jars_present(source: Path, jar_set: str) -> bool:
    """A source that starts with `// oracle jar set requires: <jar name prefix> ...` is compiled only with
    jar sets holding such jars (the KIP-848 server assignor harness needs kafka-group-coordinator, which
    the older client-only jar sets lack)."""
    first = source.read_text(encoding="utf-8").split("\n", 1)[0]
    if not first.startswith(REQUIRES_MARKER):
        return True
    return all(any(jar_dir(jar_set).glob(f"{prefix}*.jar")) for prefix in first[len(REQUIRES_MARKER):].split())


def run_java(source_dir: Path, jar_set: str, main_class: str, *args: str, timeout: float = 300) -> str:
    """Run `main_class` of the harness with the jar set on the classpath; returns its standard output."""
    classes = compile_sources(source_dir, jar_set)
    result = subprocess.run(
        ["java", "-Xmx512m", "-cp", f"{classes}:{jar_dir(jar_set)}/*", main_class, *args],
        check=True, capture_output=True, text=True, timeout=timeout,
    )
    return result.stdout
