"""A report that names what it was drawn from (jobs.report.report_stamp) is kept by a night that changed none
of its tables: `report_is_current` reads the stamp back from the end of the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

from jobs.common.delta_io import Tables
from jobs.report import REPORT_INPUTS, report_is_current, report_stamp
from schemas.gold import TableSpec

STAMP = '<!-- cgh report inputs {"database": "db", "groups_shown": 8, "versions": {"group_generations": 3}} -->'


def test_a_report_ending_with_the_stamp_is_current(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    page.write_text("<html>" + "x" * 100_000 + "</html>\n" + STAMP + "\n")
    assert report_is_current(page, STAMP)


def test_another_stamp_a_missing_file_or_no_stamp_is_not_current(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    assert not report_is_current(page, STAMP)  # never written
    page.write_text("<html></html>\n" + STAMP.replace('"group_generations": 3', '"group_generations": 4') + "\n")
    assert not report_is_current(page, STAMP)  # drawn from an older version
    page.write_text("<html></html>\n")
    assert not report_is_current(page, STAMP)  # written before reports carried a stamp
    page.write_text(STAMP + "\n<html>" + "x" * 100_000 + "</html>\n")
    assert not report_is_current(page, STAMP)  # a stamp is only read at the end


class _Logs:
    """Tables as report_stamp reads them: each table's log, a version and its commit's time (no Spark)."""

    def __init__(self, location: str, commits: dict[str, tuple[int, int | None]]) -> None:
        self.database, self.location, self.commits = "db", location, commits

    def version(self, spec: TableSpec) -> int:
        return self.commits[spec.name][0]

    def commit_actions(self, spec: TableSpec, version: int) -> list[dict[str, Any]] | None:
        at = self.commits[spec.name][1]
        return None if at is None else [{"commitInfo": {"timestamp": at, "operation": "MERGE"}}, {"add": {}}]


def _stamp(location: str, first_commit_ms: int | None, version: int = 3) -> str:
    commits = {spec.name: (version, None if first_commit_ms is None else first_commit_ms + i)
               for i, spec in enumerate(REPORT_INPUTS)}
    return report_stamp(cast(Tables, _Logs(location, commits)), 8)


def test_a_warehouse_rebuilt_to_the_same_versions_gets_its_report_drawn_again(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    page.write_text("<html></html>\n" + _stamp("/wh/tables", 1_700_000_000_000) + "\n")
    assert report_is_current(page, _stamp("/wh/tables", 1_700_000_000_000))  # the same commits: kept
    # the same versions, committed later (the warehouse deleted and built again, e.g. after an upgrade)
    assert not report_is_current(page, _stamp("/wh/tables", 1_700_000_086_400))
    # the same versions and times in another warehouse written to the same report path
    assert not report_is_current(page, _stamp("/other/tables", 1_700_000_000_000))
    assert not report_is_current(page, _stamp("/wh/tables", 1_700_000_000_000, version=4))


def test_a_stamp_names_each_input_tables_version_and_commit_time() -> None:
    stamp = _stamp("/wh/tables", 1_000)
    inputs = json.loads(stamp.removeprefix("<!-- cgh report inputs ").removesuffix(" -->"))
    assert inputs == {"database": "db", "location": "/wh/tables", "groups_shown": 8,
                      "versions": {spec.name: [3, 1_000 + i] for i, spec in enumerate(REPORT_INPUTS)}}
    # a commit file gone (log retention) leaves the version alone
    assert json.loads(_stamp("/wh/tables", None).removeprefix("<!-- cgh report inputs ").removesuffix(" -->"))[
        "versions"] == {spec.name: [3, None] for spec in REPORT_INPUTS}
