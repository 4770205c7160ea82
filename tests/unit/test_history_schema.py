"""The table shape of the history rows: Spark DDL strings built from the row types (no pyspark), plain
``to_dict()`` values, and the library boundary (no Spark, no pandas imported by the history package)."""

from __future__ import annotations

import subprocess
import sys

import pyarrow as pa

from coordinator_core.history import (
    Evidence,
    GenerationRow,
    MemberIdChange,
    OffsetEventRow,
    PartitionMove,
    group_history,
    offset_history,
    schema_ddl,
    schema_fields,
)
from tests.unit.test_history_builders import at, commit, generation, member

EVIDENCE_DDL = ("event_type string, at timestamp, member_id string, cause_class string, reason string, "
                "source string, line_number bigint, message string")


def test_struct_ddls_written_out() -> None:
    assert schema_ddl(Evidence) == EVIDENCE_DDL
    assert schema_ddl(PartitionMove) == (
        "topic string, partition bigint, from_member string, to_member string, via_generation bigint")
    assert schema_fields(MemberIdChange) == (
        ("kind", "string"), ("old_member_id", "string"), ("new_member_id", "string"),
        ("group_instance_id", "string"), ("client_id", "string"), ("client_host", "string"),
        ("since_generation", "bigint"), ("at", "timestamp"))


def test_generation_row_columns() -> None:
    columns = dict(schema_fields(GenerationRow))
    assert list(columns)[:6] == ["group_id", "group_protocol", "generation", "outcome", "protocol_type", "protocol"]
    assert columns["members"] == (
        "array<struct<member_id:string,group_instance_id:string,client_id:string,client_host:string,"
        "subscribed_topics:array<string>,assigned_partitions:array<struct<topic:string,partition:bigint>>,"
        "owned_partitions:array<struct<topic:string,partition:bigint>>,"
        "target_partitions:array<struct<topic:string,partition:bigint>>,"
        "partitions_pending_revocation:array<struct<topic:string,partition:bigint>>,member_epoch:bigint,"
        "previous_member_epoch:bigint,member_state:string,rebalance_timeout_ms:bigint,session_timeout_ms:bigint>>")
    assert columns["evidence"] == "array<struct<" + EVIDENCE_DDL.replace(" ", ":").replace(",:", ",") + ">>"
    assert (columns["cause_inferred"], columns["rebalance_started_at"], columns["causes"]) == (
        "boolean", "timestamp", "array<string>")
    assert schema_ddl(OffsetEventRow).startswith("group_id string, kind string, topic string, partition bigint, ")


def test_to_dict_is_plain_and_matches_the_columns() -> None:
    records = [generation(0, 10.0, 1, [member("m-1", "c1", assigned=[("orders", 0)])]),
               generation(1, 20.0, 2, [member("m-2", "c2", assigned=[("orders", 0)])]),
               commit(2, 30.0, "orders", 0, 5), commit(3, 31.0, "orders", 0, 4)]
    row = group_history(records)[1].to_dict()
    assert list(row) == [name for name, _ in schema_fields(GenerationRow)]
    assert row["partitions_moved"] == [
        {"topic": "orders", "partition": 0, "from_member": "m-1", "to_member": "m-2", "via_generation": None}]
    assert row["members"][0]["assigned_partitions"] == [{"topic": "orders", "partition": 0}]
    assert (row["members_joined"], row["members_left"], row["assignment_stored_at"]) == (["m-2"], ["m-1"], at(20))
    offsets = [r.to_dict() for r in offset_history(records)]
    assert [list(r) for r in offsets] == [[name for name, _ in schema_fields(OffsetEventRow)]]
    # Arrow (what applyInPandas hands to Spark) takes the dicts as they are.
    table = pa.Table.from_pylist([r.to_dict() for r in group_history(records)])
    assert table.column("generation").to_pylist() == [1, 2]
    members_type = table.schema.field("members").type
    assert pa.types.is_list(members_type) and pa.types.is_struct(members_type.value_type)
    assert members_type.value_type.field("member_id").type == pa.string()


def test_history_imports_neither_spark_nor_pandas() -> None:
    code = ("import sys, coordinator_core.history as h; "
            "print(sorted(m for m in ('pyspark', 'pandas', 'pyarrow') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
