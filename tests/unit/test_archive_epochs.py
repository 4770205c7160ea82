"""The archive's epochs carried from run to run (jobs.ingest.replicas.ArchiveEpochs, fold_epochs): folding the
epochs of the archive's pieces, however it was cut into nights, gives the epochs of the whole, and the summary
survives the commit note's JSON."""

from __future__ import annotations

import itertools
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.ingest.replicas import ArchiveEpochs, fold_epochs

# (cluster, partition, leader epoch or None, offset): an archived row as archive_epochs groups it (the row's
# batch base offset is its offset here: the fold does not care where the start comes from)
archived_rows = st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 3),
                                   st.one_of(st.none(), st.integers(0, 4)), st.integers(0, 10_000)),
                         max_size=60)


def _grouped(rows: list[tuple[str, int, int | None, int]]) -> list[tuple[str, int, int | None, int, int]]:
    """What `archive_epochs` gives for these rows, computed directly: min and max offset per epoch."""
    keys = {(c, p, e) for c, p, e, _ in rows}
    return [(c, p, e, min(o for c2, p2, e2, o in rows if (c2, p2, e2) == (c, p, e)),
             max(o for c2, p2, e2, o in rows if (c2, p2, e2) == (c, p, e))) for c, p, e in keys]


def _sorted(rows: list[tuple[str, int, int | None, int, int]]) -> list[tuple[str, int, int | None, int, int]]:
    return sorted(rows, key=lambda r: (r[0], r[1], -1 if r[2] is None else r[2]))


@settings(max_examples=200, deadline=None)
@given(rows=archived_rows, cuts=st.lists(st.integers(0, 60), max_size=5))
def test_the_epochs_of_the_pieces_folded_are_the_epochs_of_the_whole(
        rows: list[tuple[str, int, int | None, int]], cuts: list[int]) -> None:
    bounds = [0, *sorted(min(c, len(rows)) for c in cuts), len(rows)]
    pieces = [_grouped(rows[a:b]) for a, b in itertools.pairwise(bounds)]
    carried: tuple[tuple[str, int, int | None, int, int], ...] = ()
    for piece in pieces:  # night by night, as each run folds its new rows into the carried summary
        carried = fold_epochs(carried, piece)
    assert list(carried) == _sorted(_grouped(rows))


@settings(max_examples=50, deadline=None)
@given(rows=archived_rows, version=st.integers(0, 10**6))
def test_the_summary_survives_the_commit_notes_json(rows: list[tuple[str, int, int | None, int]],
                                                     version: int) -> None:
    summary = ArchiveEpochs(version, fold_epochs(_grouped(rows)))
    assert ArchiveEpochs.from_json(json.loads(json.dumps(summary.to_json()))) == summary


def test_a_note_without_a_usable_summary_gives_none_and_watermarks_are_per_cluster() -> None:
    assert ArchiveEpochs.from_json(None) is None
    assert ArchiveEpochs.from_json({"raw_version": 3}) is None
    assert ArchiveEpochs.from_json({"raw_version": 3, "rows": [["a", 0, 1]]}) is None
    summary = ArchiveEpochs(5, fold_epochs([("a", 0, 1, 0, 9), ("a", 0, 2, 10, 14), ("b", 0, None, 0, 99),
                                            ("a", 1, 1, 0, 3)]))
    assert summary.last_offsets("a") == {0: 14, 1: 3}
    assert summary.last_offsets("b") == {0: 99}
    assert summary.last_offsets("c") == {}
