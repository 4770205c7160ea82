"""Damaged log input: binary garbage, over-long lines and invalid UTF-8, found block-wise and read anyway.

A log file copied from a crashed broker or a full disk may hold anything. The logs stage counts the damaged
lines it reads per file (`damaged_lines`), cuts over-long lines before they are classified and archived
(`cut_long_lines`), and gives an entry whose invalid bytes were decoded as replacement characters a second
reading without them (`reclassified_without_replacements`). Column-wise (NumPy, Arrow): a clean block,
nearly every one, costs a comparison over its bytes and Arrow's UTF-8 validation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: Longer lines are cut to this many bytes (the default of the config's `[logs] max_line_bytes`).
MAX_LINE_BYTES: Final = 1_048_576
#: The counts of damaged lines a scan keeps (FileScan's and log_file_reads' columns), in the order
#: `damaged_lines` finds them.
DAMAGE_COUNTERS: Final = ("malformed_lines", "overlong_lines", "invalid_utf8_lines")
#: The control bytes text lines hold: tab, newline, carriage return, escape (terminal colours). Any other
#: byte below 0x20 in a line makes it binary garbage.
_TEXT_CONTROLS: Final = (9, 10, 13, 27)
#: What an entry is classified as, when the entry without its replacement characters says more.
_UNPARSED_STATUSES: Final = ("unparsed", "unparsed_below_info")
_PARSED_STATUSES: Final = ("event", "known_non_event")


def damaged_lines(data: bytes, offsets: Any, max_line_bytes: int, controls: Any = None) -> tuple[Any, Any, Any]:
    """Indices of the damaged lines of a block, by kind: malformed (a control byte other than tab, CR or
    ESC: binary garbage), over-long (more than `max_line_bytes` bytes before its newline), not UTF-8.

    Line i is data[offsets[i]:offsets[i + 1]], its newline included (the file's last line may have none). A
    line may be of several kinds. `controls`: the positions of the block's control bytes, when the caller
    already has them. A clean block (nearly every one) costs a comparison over its bytes and Arrow's UTF-8
    validation; only the lines holding a byte above 0x7F are decoded one by one, and only if the block
    fails validation.
    """
    start, end = int(offsets[0]), int(offsets[-1])
    view = np.frombuffer(data, np.uint8)
    if controls is None:
        controls = np.flatnonzero(view[start:end] < 32) + start
    controls = controls[(controls >= start) & (controls < end)]
    controls = controls[~np.isin(view[controls], _TEXT_CONTROLS)]
    malformed = np.unique(np.searchsorted(offsets, controls, side="right") - 1)
    lengths = np.diff(offsets)
    overlong = np.flatnonzero(lengths - (view[offsets[1:] - 1] == 10) > max_line_bytes)
    lines = pa.Array.from_buffers(
        pa.binary(), len(lengths), [None, pa.py_buffer((offsets - start).astype(np.int32)),
                                    pa.py_buffer(memoryview(data)[start:end])]
    )
    invalid = np.zeros(0, np.int64)
    try:
        lines.cast(pa.string())
    except pa.ArrowInvalid:
        high = np.unique(np.searchsorted(offsets, np.flatnonzero(view[start:end] > 127) + start, side="right") - 1)
        invalid = np.array([i for i in high.tolist() if not _is_utf8(data[offsets[i] : offsets[i + 1]])], np.int64)
    return malformed, overlong, invalid


def _is_utf8(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def cut_long_lines(texts: Any, max_line_bytes: int) -> Any:
    """Entry texts (an Arrow string array) with every line longer than `max_line_bytes` bytes cut to at most
    that many, on a character boundary; the array itself when no entry is that long (nearly always)."""
    if len(texts) == 0:
        return texts
    lengths = pc.binary_length(texts)
    if pc.max(lengths).as_py() <= max_line_bytes:
        return texts
    long_rows = pc.greater(lengths, max_line_bytes)
    cut = [
        "\n".join(line.encode()[:max_line_bytes].decode("utf-8", "ignore") for line in text.split("\n"))
        for text in texts.filter(long_rows).to_pylist()
    ]
    return pc.replace_with_mask(texts, long_rows, pa.array(cut, pa.string()))


def reclassified_without_replacements(outcome: Any, texts: Any, classify: Callable[[Any], Any]) -> Any:
    """The classification of a batch of entries, where an entry with a replacement character (an invalid
    UTF-8 byte, decoded with U+FFFD) that did not parse is classified again without them.

    One stray byte in an otherwise intact line (a bit flip, a torn write) breaks the word it lands in
    ("Stabili\ufffdzed"); without it the line reads as written. The second reading is kept only when it
    parses (an event or a known non-event); the archived text keeps the replacement characters.

    Args:
        outcome: `classify(texts)` (a RecordBatch with `status` and the event's fields).
        texts: the entries' texts (an Arrow string array).
        classify: Arrow string array -> such a RecordBatch.
    """
    retry = pc.and_(pc.match_substring(texts, "\ufffd"), pc.is_in(outcome.column("status"),
                                                                 pa.array(_UNPARSED_STATUSES)))
    rows = np.flatnonzero(retry.to_numpy(zero_copy_only=False))
    if not len(rows):
        return outcome
    again = classify(pc.replace_substring(texts.take(pa.array(rows)), "\ufffd", ""))
    parsed = np.flatnonzero(pc.is_in(again.column("status"), pa.array(_PARSED_STATUSES)).to_numpy(zero_copy_only=False))
    if not len(parsed):
        return outcome
    index = np.arange(len(texts))
    index[rows[parsed]] = len(texts) + parsed
    return pa.RecordBatch.from_arrays(
        [pa.concat_arrays([outcome.column(i), again.column(i)]).take(pa.array(index))
         for i in range(outcome.num_columns)],
        schema=outcome.schema,
    )
