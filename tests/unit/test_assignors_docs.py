"""The worked examples in the assignors' docstrings are executable (their expected values are Kafka's
javadoc/test-suite examples) and must stay true."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "coordinator_core.assignors",
    "coordinator_core.assignors.range",
    "coordinator_core.assignors.roundrobin",
    "coordinator_core.assignors.sticky",
    "coordinator_core.javaisms",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
