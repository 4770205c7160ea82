"""coordinator_core is a library: importing it must not pull in Spark (nor pyarrow, which only the
vectorized decoder needs)."""

from __future__ import annotations

import subprocess
import sys


def test_importing_coordinator_core_does_not_import_pyspark_or_pyarrow() -> None:
    code = (
        "import sys, coordinator_core, coordinator_core.segment, coordinator_core.records;"
        "coordinator_core.decode_record(bytes.fromhex('0002000167'), None);"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('pyspark', 'pyarrow', 'numpy', 'py4j')];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_no_coordinator_core_module_imports_pyspark() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "coordinator_core"
    offenders = [str(p) for p in root.rglob("*.py")
                 if any(line.lstrip().startswith(("import pyspark", "from pyspark"))
                        for line in p.read_text().splitlines())]
    assert offenders == []
