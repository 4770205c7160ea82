"""Read a rendered report back: its Plotly figures (data and layout, as the page gives them to plotly.js),
its sections and its tables, so tests assert what a reader sees rather than how it was built."""

from __future__ import annotations

import base64
import html
import json
import re
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Figure:
    div_id: str
    traces: list[dict[str, Any]]
    layout: dict[str, Any]

    def axis_title(self, axis: str) -> str | None:
        title = self.layout.get(axis, {}).get("title")
        if isinstance(title, dict):
            return title.get("text")
        return title

    @property
    def title(self) -> str:
        return str(self.layout.get("title", {}).get("text", ""))


def decoded(value: Any) -> Any:
    """Plotly 6 writes numeric arrays as {"dtype": "i8", "bdata": base64}: as plain lists again."""
    if isinstance(value, dict):
        if set(value) >= {"dtype", "bdata"}:
            array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
            if "shape" in value:
                array = array.reshape([int(n) for n in str(value["shape"]).split(",")])
            return array.tolist()
        return {k: decoded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decoded(v) for v in value]
    return value


def figures(page: str) -> dict[str, Figure]:
    """Every figure of the page, by its div id (pio.to_html writes Plotly.newPlot("id", data, layout, ...))."""
    decoder = json.JSONDecoder()
    out = {}
    for m in re.finditer(r'Plotly\.newPlot\(\s*"([\w-]+)",\s*', page):
        traces, end = decoder.raw_decode(page, m.end())
        rest = re.match(r",\s*", page[end:])
        assert rest is not None
        layout, _ = decoder.raw_decode(page, end + rest.end())
        out[m.group(1)] = Figure(m.group(1), decoded(traces), decoded(layout))
    return out


def element(page: str, tag: str, element_id: str) -> str:
    """The inner HTML of the element with this id (not nested in one of the same tag)."""
    m = re.search(rf'<{tag}[^>]*\bid="{re.escape(element_id)}"[^>]*>(.*?)</{tag}>', page, re.S)
    assert m is not None, f"no <{tag} id={element_id!r}>"
    return m.group(1)


def table_rows(page: str, table_id: str) -> list[list[str]]:
    """The body rows of a table as the text of their cells (tags removed, entities decoded)."""
    body = element(page, "table", table_id).split("<tbody>", 1)[1]
    rows = re.findall(r"<tr>(.*?)</tr>", body, re.S)
    return [[text(c) for c in re.findall(r"<td>(.*?)</td>", r, re.S)] for r in rows]


def table_cells_html(page: str, table_id: str) -> list[list[str]]:
    body = element(page, "table", table_id).split("<tbody>", 1)[1]
    return [re.findall(r"<td>(.*?)</td>", r, re.S) for r in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


def text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment)).strip()


def group_sections(page: str) -> dict[str, str]:
    """Each group section's heading text (group and cluster) -> its HTML, by section id."""
    return {m.group(1): m.group(2)
            for m in re.finditer(r'<section class="group" id="([\w-]+)">(.*?)</section>', page, re.S)}


def kpi(page: str, kpi_id: str) -> str:
    return text(re.search(rf'<div class="kpi" id="{kpi_id}"><b>(.*?)</b>', page).group(1))  # type: ignore[union-attr]


#: A group's cost line (jobs.common.report_html.cost_line), its figures as named groups.
COST_LINE = re.compile(
    r"Cost: (?P<paused>[\d,]+) of (?P<rows>[\d,]+) rebalances(?: \(counting (?P<restarts>\d+) static restarts?\))? "
    r"paused partitions: (?P<seconds>[\d.,]+) paused partition-seconds \((?:at least (?P<low_only>[\d.,]+), no upper "
    r"bound|between (?P<low>[\d.,]+) and (?P<high>[\d.,]+)); point figures, else low bounds\), longest group pause "
    r"(?P<longest>[\d.,]+) s(?: \(at most (?P<longest_high>[\d.,]+) s\))?, (?:about (?P<records>[\d,]+) records "
    r"delayed \(a consumption-rate estimate\)|records delayed unknown \(no consumption rate\)); (?P<inferred>[\d,]+) "
    r"of [\d,]+ inferred \(an end from bounds or commits rather than a log line or record\)\.")


def cost_line(section: str) -> str:
    """A group section's cost sentence, as text."""
    m = re.search(r'<p class="cost" id="[\w-]+-cost">(.*?)</p>', section, re.S)
    assert m is not None, "no cost line"
    return text(m.group(1))


def cost_figures(line: str) -> dict[str, float | None]:
    """The figures of a cost line that measured something (None: absent, e.g. no upper bound, no rate)."""
    m = COST_LINE.fullmatch(line)
    assert m is not None, line
    values = {k: None if v is None else float(v.replace(",", "")) for k, v in m.groupdict().items()}
    low_only = values.pop("low_only")
    values["low"] = low_only if values["low"] is None else values["low"]
    return values
