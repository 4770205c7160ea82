"""How the folds' carried states become bytes for a ``group_state`` column and back.

Each fold (generations, storms, what-if) carries a dataclass of coordinator_core's own values with a layout
``version`` field; the bytes are pickle compressed with zlib. A state of another layout version is refused
with the caller's error, so that old state is rebuilt instead of being misread.
"""

from __future__ import annotations

import pickle
import zlib
from typing import Any, TypeVar

S = TypeVar("S")


def dump_versioned(state: Any) -> bytes:
    """The state as compressed bytes."""
    return zlib.compress(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL), 6)


def load_versioned(data: bytes | None, kind: type[S], version: int, error: type[Exception], what: str,
                   remedy: str = "") -> S | None:
    """The state from its bytes (None for none); ``error`` when it is not a ``kind`` of ``version``."""
    if data is None:
        return None
    state = pickle.loads(zlib.decompress(bytes(data)))  # noqa: S301 - the project's own state table
    if not isinstance(state, kind) or getattr(state, "version", None) != version:
        found = getattr(state, "version", None)
        raise error(f"{what} of layout version {found}, this code reads {version}{remedy}")
    return state
