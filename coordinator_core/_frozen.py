"""A faster constructor for frozen, slotted dataclasses.

``@dataclass(frozen=True, slots=True)`` builds instances through ``object.__setattr__`` per field, which
costs several times the decoding of the field itself; decoders build millions of these. ``fast_init``
replaces ``__init__`` with one that stores each field through its slot descriptor: instances stay
immutable (assignment still raises FrozenInstanceError) and compare, hash and print as before.
"""

from __future__ import annotations

import dataclasses
from typing import TypeVar

T = TypeVar("T")


def fast_init(cls: type[T]) -> type[T]:
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if any(f.default_factory is not dataclasses.MISSING for f in fields) or not hasattr(cls, "__slots__"):
        return cls  # default factories or no slots: keep the dataclass's own __init__
    names = [f.name for f in fields]
    env: dict[str, object] = {f"_set_{n}": cls.__dict__[n].__set__ for n in names}
    params = []
    for f in fields:  # plain defaults (trailing, as dataclasses require) are bound once, like def defaults
        if f.default is dataclasses.MISSING:
            params.append(f.name)
        else:
            env[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
    body = "\n".join(f"    _set_{n}(self, {n})" for n in names) or "    pass"
    src = f"def __init__(self, {', '.join(params)}):\n{body}\n"
    ns: dict[str, object] = {}
    exec(compile(src, f"<fast_init {cls.__name__}>", "exec"), env, ns)
    init = ns["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"  # type: ignore[attr-defined]
    init.__doc__ = cls.__init__.__doc__
    setattr(cls, "__init__", init)  # noqa: B010 - assigning a method on purpose
    return cls
