"""The Spark tests' row-set comparison (tests/spark/same_rows.py) decides as chispa's sorted comparison does:
equal multisets of rows pass, any missing, extra or repeated row fails and is shown."""

from __future__ import annotations

import pytest
from pyspark.sql import Row

from tests.spark.same_rows import assert_same_row_sets, hashable


def test_rows_in_another_order_with_maps_and_nested_values_are_equal() -> None:
    a = [Row(g="g1", m={"b": 2, "a": 1}, xs=[Row(p=1, t=bytearray(b"x"))]), Row(g="g2", m={}, xs=[])]
    b = [(("g2", {}, [])), ("g1", {"a": 1, "b": 2}, [(1, b"x")])]
    assert_same_row_sets(a, b)
    assert hashable({"b": [1], "a": None}) == (("a", None), ("b", (1,)))


@pytest.mark.parametrize(("got", "want", "shown"), [
    ([("g1", 1)], [("g1", 2)], "1 expected rows missing, 1 unexpected"),
    ([("g1", 1), ("g1", 1)], [("g1", 1)], "0 expected rows missing, 1 unexpected"),
    ([], [("g1", None)], "1 expected rows missing, 0 unexpected"),
    ([("g1", {"a": 1})], [("g1", {"a": 2})], "1 expected rows missing, 1 unexpected"),
])
def test_a_missing_changed_or_repeated_row_fails_and_is_shown(got: list, want: list, shown: str) -> None:
    with pytest.raises(AssertionError, match=shown) as failure:
        assert_same_row_sets(got, want, "t", ["group", "n"])
    assert "t differ (columns group, n)" in str(failure.value)


def test_a_long_row_is_shown_cut() -> None:
    with pytest.raises(AssertionError) as failure:
        assert_same_row_sets([("g1", b"x" * 5000)], [("g1", b"y" * 5000)])
    assert len(str(failure.value)) < 2000 and "characters)" in str(failure.value)
