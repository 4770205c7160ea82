"""Compile and run the project's small Java oracle harnesses against a jar set fetched from Maven Central.

A harness lives in jvm/<name>/src/main/java; the jar set is the Maven closure that `scripts/bootstrap
--kafka` copied into .cache/jars/<jar set>/ (scripts/fetch_jars.py). Classes are compiled with javac once
per (source hash, jar set) into .cache/oracle-classes/ and reused.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def jar_dir(jar_set: str) -> Path:
    return ROOT / ".cache" / "jars" / jar_set


def compile_sources(source_dir: Path, jar_set: str) -> Path:
    """javac every .java file under `source_dir` against the jar set; returns the classes directory."""
    sources = sorted(source_dir.rglob("*.java"))
    if not sources:
        raise FileNotFoundError(f"no Java sources under {source_dir}")
    if not any(jar_dir(jar_set).glob("*.jar")):
        raise FileNotFoundError(
            f"jar set {jar_set!r} is missing from {jar_dir(jar_set)}; run scripts/bootstrap --kafka first")
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()[:16]
    out = ROOT / ".cache" / "oracle-classes" / f"{source_dir.parts[-4]}-{digest}-{jar_set}"
    if (out / ".compiled").is_file():
        return out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    subprocess.run(["javac", "-nowarn", "-d", str(out), "-cp", f"{jar_dir(jar_set)}/*", *map(str, sources)],
                   check=True, capture_output=True)
    (out / ".compiled").touch()
    return out


def run_java(source_dir: Path, jar_set: str, main_class: str, *args: str, timeout: float = 300) -> str:
    """Run `main_class` of the harness with the jar set on the classpath; returns its standard output."""
    classes = compile_sources(source_dir, jar_set)
    result = subprocess.run(
        ["java", "-Xmx512m", "-cp", f"{classes}:{jar_dir(jar_set)}/*", main_class, *args],
        check=True, capture_output=True, text=True, timeout=timeout,
    )
    return result.stdout
