"""A report that names what it was drawn from (jobs.report.report_stamp) is kept by a night that changed none
of its tables: `report_is_current` reads the stamp back from the end of the file."""

from __future__ import annotations

from pathlib import Path

from jobs.report import report_is_current

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
