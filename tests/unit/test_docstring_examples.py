"""The worked examples in coordinator_core's docstrings are executable and must stay true (the assignors'
expected values are Kafka's javadoc/test-suite examples; the decoders' come from the reference vectors)."""

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
    "coordinator_core.consumer_protocol",
    "coordinator_core.records",
    "coordinator_core.segment",
    "coordinator_core.replay",
    "coordinator_core.client_library",
    "coordinator_core.storms",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
