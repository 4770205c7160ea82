"""Open the rendered audit report from disk in headless Chromium: every plot draws, the page logs no
errors, and screenshots are saved as test artefacts: the page's top (artifacts/report.png: key figures,
fleet chart, storm table with the why), the first group's section (artifacts/report-group.png) and the
what-if section (artifacts/report-whatif.png).

Chromium is driven from its command line, no extra Python package needed: --dump-dom prints the DOM after
the scripts ran (under a virtual time budget), which must contain the SVG each Plotly figure draws, and
--enable-logging writes the page's console, which must hold no error.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from jobs.common.report_html import render_report
from tests.report.sample_data import sample_report_data

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars"]


@pytest.fixture(scope="module")
def report_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if CHROMIUM is None:
        raise RuntimeError("Chromium is not installed; scripts/bootstrap --kafka installs Debian's chromium")
    path = tmp_path_factory.mktemp("report") / "rebalance-audit.html"
    path.write_text(render_report(sample_report_data()), encoding="utf-8")
    return path


def chromium(profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], check=False, capture_output=True,
                          text=True, timeout=180)


def test_every_plot_draws_and_the_console_is_clean(report_file: Path, tmp_path: Path) -> None:
    log = tmp_path / "chrome_debug.log"
    result = chromium(tmp_path / "profile", "--enable-logging", "--v=0", f"--log-file={log}",
                      "--virtual-time-budget=15000", "--dump-dom", report_file.as_uri())
    dom = result.stdout
    figures = re.findall(r'<div id="([\w-]+)" class="plotly-graph-div', dom)
    assert len(figures) == 14
    # Plotly renders each figure into an <svg class="main-svg">; a figure that failed to draw has none.
    assert dom.count('class="main-svg"') >= len(figures)
    assert "Group orders" in dom and "orders-worker@/10.0.0.7" in dom
    assert "inferred from the records" in dom and 'href="#group-0"' in dom
    console = log.read_text(errors="replace") if log.exists() else result.stderr
    errors = [line for line in console.splitlines()
              if "CONSOLE" in line and ("ERROR" in line or "Uncaught" in line or ":ERROR:" in line)]
    assert errors == []


def focused(report: Path, section_id: str, out_dir: Path) -> Path:
    """A copy of the report that shows only one section (the others hidden by a style rule), for a
    screenshot of that section as the page draws it."""
    page = report.read_text(encoding="utf-8").replace(
        "</style>", f"main > :not(#{section_id}) {{ display: none; }}</style>", 1)
    path = out_dir / f"{section_id}.html"
    path.write_text(page, encoding="utf-8")
    return path


@pytest.mark.parametrize(("name", "section_id", "height"), [("report", None, 2400), ("report-group", "group-0", 2200),
                                                             ("report-whatif", "whatif", 1400)])
def test_screenshot_artefacts(report_file: Path, tmp_path: Path, name: str, section_id: str | None,
                              height: int) -> None:
    out = ROOT / "artifacts" / f"{name}.png"
    out.parent.mkdir(exist_ok=True)
    if out.exists():
        out.unlink()
    page = report_file if section_id is None else focused(report_file, section_id, tmp_path)
    chromium(tmp_path / "profile", f"--window-size=1400,{height}", "--virtual-time-budget=15000",
             f"--screenshot={out}", page.as_uri())
    assert out.is_file() and out.stat().st_size > 50_000  # a drawn page, not a blank one


def test_the_focused_section_is_the_one_drawn(report_file: Path, tmp_path: Path) -> None:
    """What the section screenshots show: in the DOM after the scripts ran, the group section's figures
    drew and the what-if table is there (display none hides, it does not remove)."""
    dom = chromium(tmp_path / "profile", "--virtual-time-budget=15000", "--dump-dom",
                   focused(report_file, "group-0", tmp_path).as_uri()).stdout
    section = dom[dom.index('id="group-0"'):dom.index('id="group-1"')]
    assert section.count('class="main-svg"') >= 3 and "Why:" in section and "session.timeout.ms" in section
