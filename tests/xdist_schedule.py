"""The scheduler of `--dist loadgroup` runs (tests/conftest.py says how the suite splits across workers).

xdist itself orders units by their number of tests, which puts the few long property and crash tests last,
on one core, at the end of the run: units are handed out longest first. With three workers or more, the last
one is the waiter (tests/conftest.py's WAITING).
"""

from __future__ import annotations

from typing import Any

import pytest
from xdist.scheduler import LoadGroupScheduling

from tests.conftest import LONGEST_FIRST, WAITING, _rank


class LongestFirst(LoadGroupScheduling):
    """LoadGroupScheduling with the units handed out longest first, and the waiting units kept for the waiter."""

    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        super().__init__(config, log)
        #: the first unit each worker but the waiter took
        self._first_units: dict[Any, str] = {}

    def _waiter(self) -> Any:
        """The last worker when there are three or more (and it is up), else None."""
        if self.numnodes < 3:
            return None
        return next((n for n in self.nodes if n.gateway.id == f"gw{self.numnodes - 1}"), None)

    def _first_units_done(self) -> bool:
        """Whether the first unit each other worker took (the longest, started with a cold JVM) is done."""
        first = self._first_units
        for node in self.nodes:
            if node is self._waiter():
                continue
            if node not in first:  # not given one yet, unless there is none left for it
                if any(unit not in WAITING for unit in self.workqueue):
                    return False
            elif not all(self.assigned_work.get(node, {}).get(first[node], {}).values()):
                return False
        return True

    def _assign_work_unit(self, node: Any) -> None:
        for unit in sorted(self.workqueue, key=_rank, reverse=True):
            if _rank(unit) < len(LONGEST_FIRST):
                self.workqueue.move_to_end(unit, last=False)
        waiter = self._waiter()
        if waiter is not None:
            # The waiter takes the waiting units only, the other workers everything else. It starts once
            # the other workers' first units are done: beside their cold JVMs, its brokers and clients
            # slowed those units by a fifth (more than the wait it took off them).
            if node is waiter and not self._first_units_done():
                return
            mine = [u for u in self.workqueue if (u in WAITING) == (node is waiter)]
            if not mine:
                # None left for it: a worker runs the last test it holds only once told to stop.
                node.shutdown()
                return
            self.workqueue.move_to_end(mine[0], last=False)
            if node is not waiter:
                self._first_units.setdefault(node, mine[0])
        super()._assign_work_unit(node)

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        super().mark_test_complete(node, item_index, duration)
        waiter = self._waiter()
        if (waiter is not None and node is not waiter and not waiter.shutting_down
                and self._pending_of(self.assigned_work[waiter]) == 0 and self._first_units_done()):
            self._assign_work_unit(waiter)
