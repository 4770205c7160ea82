"""Class data sharing (CDS) for local Spark JVMs: Spark's, Delta's and Kafka's classes from one mapped archive.

A local run's JVM (driver and executors at once) loads ~32,000 classes, ~23,000 of them from the jars of
Spark, Delta and Kafka's client. Reading, parsing, verifying and defining them cost 11-13 s of a sample
night's 70-90 s process on the 2-core machine (the JVM's `sun.cls.time`); from a CDS archive, which the JVM
maps into memory already parsed and verified, 3.5-5 s. The rest of the ~32,000 are classes Spark generates
while it runs (query code, lambdas), which no archive can hold.

A JVM takes an archive only for the class path it was dumped with, each jar's path, size and modification
time included, and the project's `.venv` (pyspark's jars) is in the checkout: so an archive belongs to one
checkout and one install (`.cache/cds/` in it), named by a key over the Java and every jar on that class
path. An archive that no longer matches (a jar reinstalled, another Java) is simply not used by the JVM,
silently: a slower start, never a different result. `scripts/bootstrap` builds it, in two steps:

1. the class list: the classes a night on the samples loads (`-XX:DumpLoadedClassList`), from one night into
   a throwaway warehouse. It names classes, not paths, so it is kept per user
   (`~/.cache/consumer-group-history/cds/`, keyed by the jars' names and sizes) and another checkout of the
   same versions dumps without a night of its own;
2. the dump: spark-submit's own launcher starts the JVM with `-Xshare:dump`, so the archive's class path is
   exactly the one every later launch builds; the result is checked with `-Xshare:on` (which refuses an
   archive that does not match) before it is put in place.

Delta's and Kafka's jars go on the driver's class path in local mode (`spark.driver.extraClassPath`) for
this: classes of the jars Spark adds at run time (`spark.jars`) come from a class loader whose classes a
static archive cannot hold.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import tomllib

if TYPE_CHECKING:
    from jobs.common.config import Config

#: Bump when what goes into an archive changes (its dump options, the training run), so old ones are rebuilt.
ARCHIVE_FORMAT = 1
PROJECT_ROOT = Path(__file__).resolve().parents[2]
#: Where a checkout keeps its archive (gitignored, beside the jars scripts/bootstrap copies).
ARCHIVE_DIR = PROJECT_ROOT / ".cache" / "cds"
#: The per-user cache of class lists (path-independent), shared by every checkout on the machine.
CLASS_LIST_DIR = Path(os.environ.get("CGH_CDS_CACHE") or Path.home() / ".cache" / "consumer-group-history" / "cds")
#: The option naming an archive: left out of the options a training night or a dump starts from.
_ARCHIVE_OPTION = "-XX:SharedArchiveFile="


def spark_home() -> Path:
    """Where pyspark's launcher and jars are (the pip package, or SPARK_HOME when set, as pyspark does)."""
    if os.environ.get("SPARK_HOME"):
        return Path(os.environ["SPARK_HOME"])
    import pyspark
    return Path(pyspark.__file__).parent


def java_executable() -> Path | None:
    """The java spark-submit starts (`$JAVA_HOME/bin/java`, else the one on PATH), resolved."""
    java_home = os.environ.get("JAVA_HOME")
    found = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def _java_identity(java: Path) -> str:
    """What tells one Java install from another without starting it: its release file and its libjvm."""
    home = java.parents[1]
    parts = [str(java)]
    release = home / "release"
    if release.is_file():
        parts.append(release.read_text(errors="replace"))
    for libjvm in sorted(home.glob("lib/server/libjvm.*")):
        stat = libjvm.stat()
        parts.append(f"{libjvm}:{stat.st_size}:{stat.st_mtime_ns}")
    return "\n".join(parts)


def _jars_on_class_path(extra_jars: Sequence[str]) -> list[Path]:
    return [Path(j) for j in extra_jars] + sorted((spark_home() / "jars").glob("*.jar"))


def archive_key(extra_jars: Sequence[str]) -> str | None:
    """The name of the archive for this Java and these jars (paths, sizes, modification times); None without
    a java to run."""
    java = java_executable()
    if java is None:
        return None
    digest = hashlib.sha256(f"format {ARCHIVE_FORMAT}\n{_java_identity(java)}\n".encode())
    for jar in _jars_on_class_path(extra_jars):
        try:
            stat = jar.stat()
        except OSError:
            continue
        digest.update(f"{jar.resolve()}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:20]


def class_list_key(extra_jars: Sequence[str]) -> str | None:
    """The name of a class list: the Java and the jars by name and size only (a class list names classes)."""
    java = java_executable()
    if java is None:
        return None
    home = java.parents[1]
    release = (home / "release").read_text(errors="replace") if (home / "release").is_file() else str(home)
    digest = hashlib.sha256(f"format {ARCHIVE_FORMAT}\n{release}\n".encode())
    for jar in _jars_on_class_path(extra_jars):
        if jar.exists():
            digest.update(f"{jar.name}:{jar.stat().st_size}\n".encode())
    return digest.hexdigest()[:20]


def archive_path(extra_jars: Sequence[str]) -> Path | None:
    key = archive_key(extra_jars)
    return ARCHIVE_DIR / f"spark-{key}.jsa" if key else None


def java_options(extra_jars: Sequence[str]) -> list[str]:
    """The driver JVM option naming this checkout's archive, when bootstrap has built one for these jars."""
    if os.environ.get("CGH_NO_CLASS_ARCHIVE"):
        return []
    path = archive_path(extra_jars)
    return [f"{_ARCHIVE_OPTION}{path}"] if path is not None and path.is_file() else []


# --- building ---------------------------------------------------------------------------------------------


def _say(message: str) -> None:
    print(f"[class archive] {message}", file=sys.stderr, flush=True)


def _training_config(workdir: Path, class_list: Path) -> Config:
    """conf/local.toml's night (the samples, every stage) into a warehouse under `workdir`, its JVM writing
    the classes it loads to `class_list`."""
    from jobs.common.config import DEFAULT_CONFIG, parse_config
    from jobs.common.session import spark_conf

    with open(DEFAULT_CONFIG, "rb") as fh:
        data = tomllib.load(fh)
    data.setdefault("tables", {})["location"] = str(workdir / "tables")
    spark = data.setdefault("spark", {})
    spark["warehouse_dir"] = str(workdir / "spark-warehouse")
    spark["metastore_dir"] = str(workdir / "metastore_db")
    spark["show_progress"] = False
    data.setdefault("report", {})["path"] = str(workdir / "report" / "rebalance-audit.html")
    data.setdefault("metrics", {})["textfile"] = ""
    config = parse_config(data, root=PROJECT_ROOT)
    options = [o for o in spark_conf(config.spark).get("spark.driver.extraJavaOptions", "").split()
               if not o.startswith(_ARCHIVE_OPTION)]
    spark.setdefault("extra", {})["spark.driver.extraJavaOptions"] = " ".join(
        [*options, f"-XX:DumpLoadedClassList={class_list}"])
    return parse_config(data, root=PROJECT_ROOT)


def _train(workdir: Path, class_list: Path) -> None:
    """One night on the samples in this process, its JVM listing the classes it loads."""
    from jobs.common.session import build_session

    # jobs.nightly is above jobs.common (which the jobs import): imported by name, not as a dependency
    run_nightly = importlib.import_module("jobs.nightly").run_nightly
    config = _training_config(workdir, class_list)
    session = build_session(config)
    try:
        run_nightly(session, config)
    finally:
        session.stop()


def _class_list(extra_jars: Sequence[str]) -> Path:
    """The cached class list for these jars, made by a training night when there is none."""
    key = class_list_key(extra_jars)
    target = CLASS_LIST_DIR / f"classlist-{key}.txt"
    if target.is_file():
        return target
    CLASS_LIST_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="cgh-cds-train-") as tmp:
        listing = Path(tmp) / "classlist.txt"
        _say("listing the classes a night loads: one night on the samples into a throwaway warehouse (~1-2 min)")
        started = time.monotonic()
        run = subprocess.run([sys.executable, "-m", "jobs.common.class_archive", "--train", tmp, str(listing)],
                             check=False, cwd=PROJECT_ROOT, capture_output=True, text=True)
        if run.returncode != 0 or not listing.is_file():
            raise RuntimeError(f"the training night failed (exit {run.returncode}):\n{run.stderr[-4000:]}")
        _say(f"{sum(1 for _ in listing.open())} classes listed in {time.monotonic() - started:.0f} s")
        os.replace(listing, target)
    return target


def _launch_command(conf: dict[str, str], env: dict[str, str]) -> list[str]:
    """The java command spark-submit runs for these settings (its launcher prints it and we stop there: the
    dump's JVM exits before it runs anything)."""
    command = [str(spark_home() / "bin" / "spark-submit"), "--master", "local[1]"]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    command.append("pyspark-shell")
    run = subprocess.run(command, check=False, env={**env, "SPARK_PRINT_LAUNCH_COMMAND": "1"}, capture_output=True,
                         text=True, cwd=PROJECT_ROOT, timeout=600)
    printed = [line for line in run.stderr.splitlines() if line.startswith("Spark Command: ")]
    if not printed:
        raise RuntimeError(f"spark-submit printed no launch command (exit {run.returncode}):\n{run.stderr[-4000:]}")
    if run.returncode != 0:
        raise RuntimeError(f"the dump failed (exit {run.returncode}):\n{(run.stdout + run.stderr)[-4000:]}")
    return shlex.split(printed[0].removeprefix("Spark Command: "))


def verify(archive: Path, launch: Sequence[str]) -> None:
    """Refuse an archive the JVM of `launch` (a spark-submit java command) would not map: the same command's
    options with -Xshare:on, which fails on any mismatch, and -version instead of the main class."""
    args: list[str] = []
    tokens = list(launch[1:])
    i = 0
    while i < len(tokens) and tokens[i].startswith("-"):
        token = tokens[i]
        if token in ("-cp", "-classpath"):
            args += [token, tokens[i + 1]]
            i += 2
            continue
        if not token.startswith(("-Xshare:", "-XX:SharedClassListFile=", _ARCHIVE_OPTION)):
            args.append(token)
        i += 1
    run = subprocess.run([launch[0], *args, "-Xshare:on", f"{_ARCHIVE_OPTION}{archive}", "-version"],
                         check=False, capture_output=True, text=True, timeout=120)
    if run.returncode != 0 or "sharing" not in run.stderr:
        raise RuntimeError(f"the JVM refuses {archive}:\n{(run.stdout + run.stderr)[-2000:]}")


def build(force: bool = False) -> Path | None:
    """This checkout's archive for conf/local.toml's local JVM: the existing one, or a new one."""
    from jobs.common.config import load_config
    from jobs.common.session import local_jars, spark_conf

    config = load_config(None)
    jars = local_jars(config.spark.jars_dir)
    target = archive_path(jars)
    if target is None:
        _say("no java found: no class archive (the JVM will load its classes from the jars)")
        return None
    if target.is_file() and not force:
        return target
    class_list = _class_list(jars)
    ARCHIVE_DIR.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.stem}.{os.getpid()}.partial")
    partial.unlink(missing_ok=True)
    conf = spark_conf(config.spark)
    options = [o for o in conf.get("spark.driver.extraJavaOptions", "").split() if not o.startswith(_ARCHIVE_OPTION)]
    conf["spark.driver.extraJavaOptions"] = " ".join(
        [*options, "-Xshare:dump", f"-XX:SharedClassListFile={class_list}", f"{_ARCHIVE_OPTION}{partial}",
         "-Xlog:cds=off", "-Xlog:cds+dynamic=off"])
    env = {**os.environ, "SPARK_HOME": str(spark_home())}
    _say(f"dumping the classes of {class_list.name} into {target.name} (~1 min)")
    started = time.monotonic()
    try:
        launch = _launch_command(conf, env)
        if not partial.is_file():
            raise RuntimeError(f"the dump wrote no archive: {shlex.join(launch)}")
        verify(partial, launch)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    for old in ARCHIVE_DIR.glob("spark-*.jsa"):
        if old != target:
            old.unlink(missing_ok=True)
    _say(f"{target} ({target.stat().st_size >> 20} MiB) in {time.monotonic() - started:.0f} s")
    return target


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="jobs.common.class_archive", description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="dump the archive again even when it is there")
    parser.add_argument("--train", nargs=2, metavar=("WORKDIR", "CLASS_LIST"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.train:
        _train(Path(args.train[0]), Path(args.train[1]))
        return 0
    try:
        build(force=args.force)
    except (RuntimeError, subprocess.TimeoutExpired) as error:
        _say(f"not built, the JVM will load its classes from the jars: {error}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
