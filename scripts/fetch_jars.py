"""Fetch a named set of JVM jars from Maven Central into .cache/jars/<name>/, once.

Each set is declared by a Maven project at jvm/<name>/pom.xml (its dependencies are the jars wanted).
Maven resolves the transitive closure, caches it in ~/.m2, and copies the jars into the project's own
cache directory, where Spark (spark.jars), the test broker and the oracle harnesses pick them up. A
stamp holding the pom's hash makes a second call a no-op, so jobs never download at run time.

A resolved set is also kept per user, outside the checkout (`$CGH_JAR_CACHE`, default
~/.cache/consumer-group-history/jars/<name>-<pom hash>/), and a checkout without the set takes it from
there: a fresh clone (CI's) skips Maven altogether, which costs 10-30 s per set even with ~/.m2 filled
(Maven's own start and plugin resolution), ~5 minutes for the 27 sets the tests use.

Usage: python scripts/fetch_jars.py NAME [NAME ...]
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def jar_dir(name: str) -> Path:
    return ROOT / ".cache" / "jars" / name


def user_cache(name: str, digest: str) -> Path:
    """The per-user copy of a resolved set (shared by every checkout of the project on this machine)."""
    base = Path(os.environ.get("CGH_JAR_CACHE") or Path.home() / ".cache" / "consumer-group-history" / "jars")
    return base / f"{name}-{digest}"


def _copy_set(source: Path, target: Path) -> None:
    """The jars of `source` into a fresh `target`, hard-linked where the file system allows (no copy)."""
    if target.exists():
        shutil.rmtree(target)
    partial = target.with_name(target.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    partial.mkdir(parents=True)
    for jar in source.iterdir():
        if jar.is_file():
            try:
                os.link(jar, partial / jar.name)
            except OSError:
                shutil.copy2(jar, partial / jar.name)
    partial.rename(target)  # a set is whole or absent, never half copied


def fetch(name: str) -> Path:
    pom = ROOT / "jvm" / name / "pom.xml"
    if not pom.is_file():
        raise SystemExit(f"fetch_jars: no jar set named {name!r} (expected {pom})")
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()[:16]
    out = jar_dir(name)
    stamp = out / f".stamp-{digest}"
    if stamp.is_file():
        return out
    shared = user_cache(name, digest)
    if (shared / f".stamp-{digest}").is_file():
        _copy_set(shared, out)
        return out
    print(f"[fetch_jars] resolving jar set {name!r} from Maven Central (cached in ~/.m2)", file=sys.stderr)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    cmd = [
        "mvn", "-q", "-B", "-f", str(pom),
        "dependency:copy-dependencies",
        f"-DoutputDirectory={out}",
        "-DincludeScope=runtime",
    ]
    subprocess.run(cmd, check=True)
    stamp.touch()
    try:
        _copy_set(out, shared)
    except OSError as error:  # the checkout's own copy is what counts; the shared one only saves time
        print(f"[fetch_jars] could not keep {name!r} in {shared}: {error}", file=sys.stderr)
    return out


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    for name in argv:
        fetch(name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
