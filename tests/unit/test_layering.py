"""Which way imports go, read from the syntax trees (every `import`, at module level or inside a function).

coordinator_core is the pure decoder that `pip install .` ships alone: it imports the standard library, itself,
and the modules of its own dependencies in pyproject.toml's [project] dependencies, never Spark, Delta, jobs or
schemas. benchmarks import nothing from tests (what both need, the JVM oracle plumbing, is in jvm_oracle/), and
neither does jvm_oracle.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]


def imported_modules(source: str, package: str) -> set[str]:
    """Absolute names of every module the source imports; a relative import is inside `package`."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add(package if node.level else node.module or "")
    return names


def imports_of(folder: str) -> dict[str, set[str]]:
    """Top-level module names imported, per file of a folder of the repository."""
    out: dict[str, set[str]] = {}
    for path in sorted((ROOT / folder).rglob("*.py")):
        names = imported_modules(path.read_text(encoding="utf-8"), folder)
        out[str(path.relative_to(ROOT))] = {n.split(".")[0] for n in names}
    return out


def core_dependency_modules() -> set[str]:
    """Import names provided by the distributions in [project] dependencies (kafka-python gives `kafka`)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {re.split(r"[<>=!~;\[ ]", d, maxsplit=1)[0].lower().replace("_", "-") for d in project["dependencies"]}
    return {module for module, dists in importlib.metadata.packages_distributions().items()
            if any(d.lower().replace("_", "-") in wanted for d in dists)}


def test_the_import_reader_sees_imports_in_functions_and_relative_ones() -> None:
    source = "import os\nfrom .segment import x\ndef f():\n    import pyspark.sql\n    from jobs import cli\n"
    assert imported_modules(source, "coordinator_core") == {"os", "coordinator_core", "pyspark.sql", "jobs"}


def test_coordinator_core_imports_only_the_stdlib_itself_and_its_own_dependencies() -> None:
    allowed = set(sys.stdlib_module_names) | {"__future__", "coordinator_core"} | core_dependency_modules()
    assert {"pyarrow", "numpy", "kafka", "crc32c"} <= allowed  # the reader of pyproject.toml found them
    offenders = {path: sorted(names - allowed) for path, names in imports_of("coordinator_core").items()
                 if names - allowed}
    assert offenders == {}, f"coordinator_core imports what `pip install .` does not install: {offenders}"


def test_coordinator_core_imports_neither_spark_nor_jobs_nor_schemas() -> None:
    banned = {"pyspark", "delta", "py4j", "jobs", "schemas", "tests", "benchmarks", "jvm_oracle"}
    offenders = {path: sorted(names & banned) for path, names in imports_of("coordinator_core").items()
                 if names & banned}
    assert offenders == {}


def test_benchmarks_and_jvm_oracle_import_nothing_from_tests() -> None:
    offenders = {path: "tests" for folder in ("benchmarks", "jvm_oracle")
                 for path, names in imports_of(folder).items() if "tests" in names}
    assert offenders == {}
