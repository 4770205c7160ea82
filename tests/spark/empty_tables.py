"""Fresh test warehouses start from copies of empty tables, not from a Delta creation each.

A nightly run into a new warehouse creates its 19 tables (`Tables.ensure_all`): a Delta commit and a catalog
registration each, 2.2-3.0 s a warehouse in a warm test JVM. The suite makes dozens of fresh warehouses. A Delta
table is a directory whose log's first commit is its creation, so each table is created once per test process,
empty, by the real code (`Tables.ensure`, into a template directory), and a fresh warehouse's table starts as a
copy of that directory; `Tables.ensure` then finds an existing Delta table and registers it, as it does for any
table directory the catalog does not know (0.3-0.4 s for the 19). What a run then writes is the same.

Only the project's own table specs (those `schemas` declares) are copied; a test's own spec is created as
before. The processes a test starts (`python -m jobs.nightly`, spark-submit) create their tables for real, so
the creation path stays tested end to end. CGH_TEST_CREATE_TABLES=1 turns the copies off.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import schemas
from jobs.common.delta_io import Tables
from schemas._spec import TableSpec

#: every table spec the project declares, by name (a test's own spec of the same name is not one of them)
_PROJECT_SPECS = {spec.name: spec for spec in vars(schemas).values() if isinstance(spec, TableSpec)}


class EmptyTables:
    """Per test process: an empty copy of each project table, made on first use by the real `Tables.ensure`."""

    def __init__(self, root: Path, real_ensure: Callable[[Tables, TableSpec], None]) -> None:
        self.root = root
        self._real_ensure = real_ensure
        self._made: set[str] = set()
        self._locks = {name: threading.Lock() for name in _PROJECT_SPECS}

    def template(self, tables: Tables, spec: TableSpec) -> Path:
        """The directory of an empty `spec` table created in `tables`' session (once per process)."""
        template = Tables(tables.spark, "cgh_empty_tables", str(self.root))
        with self._locks[spec.name]:
            if spec.name not in self._made:
                template.ensure_database()
                self._real_ensure(template, spec)
                self._made.add(spec.name)
        return Path(template.path(spec))

    def ensure(self, tables: Tables, spec: TableSpec) -> None:
        """`Tables.ensure`, a project table absent from its location starting as a copy of the empty one."""
        if _PROJECT_SPECS.get(spec.name) is spec and "://" not in tables.location and not tables.exists(spec):
            shutil.copytree(self.template(tables, spec), tables.path(spec), dirs_exist_ok=True)
        self._real_ensure(tables, spec)


_installed: EmptyTables | None = None


def copy_fresh_tables(root: Path) -> None:
    """From now on in this process, project tables absent from a warehouse start as copies of empty ones (see
    the module); once per process, whatever the calls."""
    global _installed  # noqa: PLW0603 - one per process, like the Spark session
    if _installed is not None or os.environ.get("CGH_TEST_CREATE_TABLES") == "1":
        return
    real = Tables.ensure
    _installed = EmptyTables(root, real)
    copies = _installed
    Tables.ensure = lambda self, spec: copies.ensure(self, spec)  # type: ignore[method-assign]
