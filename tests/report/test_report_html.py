"""The audit report renders every section from small inputs, is one self-contained file, and names what
it found; a browser test (test_report_browser.py) checks it in headless Chromium."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from jobs.common.report_html import ReportData, render_report
from tests.report.sample_data import sample_report_data


def test_report_has_every_section_and_no_external_resources() -> None:
    page = render_report(sample_report_data())
    for element_id in ("fleet", "fleet-rebalances", "fleet-storm-timeline", "storm-table", "group-0", "group-0-gantt",
                       "group-0-durations", "group-0-movement", "whatif", "whatif-moved", "whatif-paused"):
        assert f'id="{element_id}"' in page, element_id
    assert "Group orders" in page and "Group billing" in page
    assert "orders-worker@/10.0.0.7" in page  # the flapping member is named
    # nothing loaded from the network: no script, stylesheet or image tag points outside the file
    assert re.search(r'<(?:script|link|img|iframe)[^>]*(?:src|href)="https?:', page) is None
    assert page.count('class="plotly-graph-div"') == 2 + 3 * 3 + 2  # fleet 2 figures, 3 groups x 3, what-if 2


def test_quiet_fleet_says_so() -> None:
    data = sample_report_data()
    quiet = ReportData(data.fleet, data.storms.iloc[0:0], data.generations, data.whatif, data.generated_at)
    page = render_report(quiet)
    assert "No rebalance storms" in page and 'id="storm-table"' not in page


def test_missing_columns_are_a_clear_error() -> None:
    data = sample_report_data()
    with pytest.raises(ValueError, match="storms.*severity"):
        ReportData(data.fleet, data.storms.drop(columns=["severity"]), data.generations, data.whatif,
                   data.generated_at)
    assert isinstance(data.fleet, pd.DataFrame)
