"""The columns `coordinator_core.decode_batch` returns, as a Spark type (not a table).

Derived from the decoder's Arrow contract (`coordinator_core.batch.DECODED_SCHEMA`), so the two are one
declaration: Arrow's int16/int32/int64 become Spark's short/int/long, every field nullable. The Arrow
boundary in `jobs.common.boundary` casts the decoder's output to it. `tests/unit/test_decoded_schema.py`
holds the derived type equal to the one written out by hand.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_schema, from_arrow_type

from coordinator_core import batch


def _struct(arrow_type: Any) -> T.StructType:
    spark_type = from_arrow_type(arrow_type)
    if not isinstance(spark_type, T.StructType):
        raise TypeError(f"expected an Arrow struct, got {arrow_type} (Spark type {spark_type.simpleString()})")
    return spark_type


TOPIC_PARTITION_STRUCT = _struct(batch.TOPIC_PARTITION)
MEMBER_STRUCT = _struct(batch.MEMBER)
GROUP_METADATA_STRUCT = _struct(batch.GROUP_METADATA)
DECODED_RECORD = from_arrow_schema(batch.DECODED_SCHEMA)

# In the boundary's output the decoder's `partition` (the consumed topic's partition of an offset commit)
# is renamed so it cannot be confused with the `__consumer_offsets` partition of the record itself.
DECODED_RENAMES = {"partition": "topic_partition"}
