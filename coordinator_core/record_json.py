"""Records back from their decoded JSON form (``record_json`` of the decoded rows and of silver).

The decode stage turns every record of key type 3 and above into JSON once (``batch._row``: the key's
fields, then ``value`` or, for values kept opaque, ``value_bytes``; bytes as base64). The history reads
those rows instead of decoding the archived bytes a second time, so this is the inverse: the declared
layout (``coordinator_core.schema``) tells each field's type, and the record comes back as the same
dataclasses ``decode_record`` gives.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from coordinator_core import messages as m
from coordinator_core import schema as s
from coordinator_core.errors import DecodeError
from coordinator_core.records import RECORD_TYPES, Record


def _field_value(t: s.FieldType, v: Any) -> Any:
    if v is None:
        return None
    if isinstance(t, s.ArrayOf):
        return tuple(_field_value(t.element, x) for x in v)
    if isinstance(t, s.Struct):
        return struct_from_json(t, v)
    if t is s.BYTES:
        return base64.b64decode(v)
    return v


def struct_from_json(struct: s.Struct, data: dict[str, Any]) -> Any:
    """The dataclass of ``struct`` from its JSON object (every declared field present, as encoded)."""
    return struct.cls(**{f.name: _field_value(f.type, data[f.name]) for f in struct.fields})


def record_from_json(record_type: int | None, value_version: int | None, record_json: str) -> Record:
    """The ``Record`` that ``decode_record`` gave for a record whose decoded row carries ``record_json``.

    Raises:
        DecodeError: the JSON does not match the record type's declared layout.
    """
    try:
        doc = json.loads(record_json)
        t = RECORD_TYPES.get(record_type) if record_type is not None else None
        if t is None or "key_bytes" in doc:
            raw = doc.get("value_bytes")
            return Record(record_type if record_type is not None else -1,
                          m.UnknownKey(base64.b64decode(doc["key_bytes"])), value_version,
                          base64.b64decode(raw) if raw is not None else None)
        key = struct_from_json(t.key, doc)
        if "value_bytes" in doc:
            value = base64.b64decode(doc["value_bytes"])
        elif doc.get("value") is None:
            value = None
        else:
            value = struct_from_json(t.value, doc["value"])  # type: ignore[arg-type]
        return Record(t.id, key, value_version, value)
    except (KeyError, TypeError, ValueError) as e:
        raise DecodeError(f"record_json of record type {record_type} does not match its layout ({e})",
                          "record_json", -1) from e
