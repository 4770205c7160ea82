"""The record type of a raw `__consumer_offsets` record, read from its key before anything is decoded.

A record key starts with its int16 record type (`coordinator_core.records.RECORD_TYPES`): 0 and 1 are
offset commits, 2 GroupMetadata, 3 and above the KIP-848, share and streams group types. Reading those two
bytes in the JVM lets a stage send each kind of record to its own decoding path.
"""

from __future__ import annotations

import struct

from pyspark.sql import Column
from pyspark.sql import functions as F

from coordinator_core.history.decoded import GROUP_METADATA_TYPE
from coordinator_core.records import RECORD_TYPES

#: The offset-commit record types (0, written only by Kafka 0.8.2, and 1): nearly every record of the topic.
OFFSET_COMMIT_TYPES = tuple(t.id for t in RECORD_TYPES.values() if t.name == "offset_commit")

__all__ = ["GROUP_METADATA_TYPE", "OFFSET_COMMIT_TYPES", "key_type_in"]


def key_type_in(key: Column, *types: int) -> Column:
    """Whether a raw key starts with one of the record `types` (its first two bytes, big-endian); false, not
    null, for a null key or one shorter than two bytes. A key that starts so but does not decode is still
    caught by the decoder."""
    if not types:
        raise ValueError("key_type_in: no record type given")
    prefixes = [F.lit(bytearray(struct.pack(">h", t))) for t in types]
    return F.coalesce(F.substring(key, 1, 2).isin(*prefixes), F.lit(False))
