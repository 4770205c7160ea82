"""Open the rendered audit report from disk in headless Chromium: every plot draws, the page logs no
errors, and a screenshot is saved as a test artefact (artifacts/report.png).

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
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True,
                          timeout=180)


def test_every_plot_draws_and_the_console_is_clean(report_file: Path, tmp_path: Path) -> None:
    log = tmp_path / "chrome_debug.log"
    result = chromium(tmp_path / "profile", "--enable-logging", "--v=0", f"--log-file={log}",
                      "--virtual-time-budget=15000", "--dump-dom", report_file.as_uri())
    dom = result.stdout
    figures = re.findall(r'<div id="([\w-]+)" class="plotly-graph-div', dom)
    assert len(figures) == 13
    # Plotly renders each figure into an <svg class="main-svg">; a figure that failed to draw has none.
    assert dom.count('class="main-svg"') >= len(figures)
    assert "Group orders" in dom and "orders-worker@/10.0.0.7" in dom
    console = log.read_text(errors="replace") if log.exists() else result.stderr
    errors = [line for line in console.splitlines()
              if "CONSOLE" in line and ("ERROR" in line or "Uncaught" in line or ":ERROR:" in line)]
    assert errors == []


def test_screenshot_artefact(report_file: Path, tmp_path: Path) -> None:
    out = ROOT / "artifacts" / "report.png"
    out.parent.mkdir(exist_ok=True)
    if out.exists():
        out.unlink()
    chromium(tmp_path / "profile", "--window-size=1400,2400", "--virtual-time-budget=15000",
             f"--screenshot={out}", report_file.as_uri())
    assert out.is_file() and out.stat().st_size > 50_000  # a drawn page, not a blank one
