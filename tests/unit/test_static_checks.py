"""ruff and mypy run with the test command, so a lint or type error fails the suite like a failing test.

What they check is pyproject.toml's: ruff's rule set and its complexity limits over the whole tree, mypy strict
on `coordinator_core` and `jobs/common` (its `files`). Both come with the `dev` extra, next to this Python.
mypy keeps its cache in .cache/mypy: a run over unchanged files takes a few seconds, a cold one about twenty.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _run(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    exe = BIN / tool
    if not exe.exists():
        pytest.fail(f"{exe} is missing: install the dev extra (scripts/bootstrap installs -e '.[spark,dev]')")
    return subprocess.run([str(exe), *args], cwd=PROJECT_ROOT, check=False, capture_output=True, text=True,
                          timeout=600)


def test_ruff_finds_nothing() -> None:
    done = _run("ruff", "check", "--no-fix", "--output-format", "concise", ".")
    if done.returncode != 0:
        pytest.fail(f"ruff check . exited {done.returncode}:\n{done.stdout}{done.stderr}", pytrace=False)


def test_mypy_strict_finds_nothing() -> None:
    done = _run("mypy", "--config-file", "pyproject.toml")
    if done.returncode != 0 or "Success: no issues found" not in done.stdout:
        pytest.fail(f"mypy exited {done.returncode}:\n{done.stdout}{done.stderr}", pytrace=False)
