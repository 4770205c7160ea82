"""Fetch a named set of JVM jars from Maven Central into .cache/jars/<name>/, once.

Each set is declared by a Maven project at jvm/<name>/pom.xml (its dependencies are the jars wanted).
Maven resolves the transitive closure, caches it in ~/.m2, and copies the jars into the project's own
cache directory, where Spark (spark.jars), the test broker and the oracle harnesses pick them up. A
stamp holding the pom's hash makes a second call a no-op, so jobs never download at run time.

Usage: python scripts/fetch_jars.py NAME [NAME ...]
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def jar_dir(name: str) -> Path:
    return ROOT / ".cache" / "jars" / name


def fetch(name: str) -> Path:
    pom = ROOT / "jvm" / name / "pom.xml"
    if not pom.is_file():
        raise SystemExit(f"fetch_jars: no jar set named {name!r} (expected {pom})")
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()[:16]
    out = jar_dir(name)
    stamp = out / f".stamp-{digest}"
    if stamp.is_file():
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
