"""How a Delta table is declared: its schema, grain, partitioning, properties and comment.

Every table the jobs write is one `TableSpec` in this package; `jobs.common.delta_io` creates tables from
them and the tests compare each transform's output schema with `spec.schema`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import types as T


def column(name: str, data_type: T.DataType, comment: str, nullable: bool = True) -> T.StructField:
    """A StructField whose comment travels into the Delta table (and `DESCRIBE TABLE`)."""
    return T.StructField(name, data_type, nullable, metadata={"comment": comment})


@dataclass(frozen=True)
class TableSpec:
    """One Delta table of the contract.

    Attributes:
        name: table name inside the catalog database (a contract: SQL users and later stages use it).
        schema: the exact columns, types, nullability and comments.
        grain: the columns that identify a row; no two rows share them.
        partition_columns: Delta partition columns (low cardinality only).
        comment: what one row means.
        properties: Delta table properties set at creation.
    """

    name: str
    schema: T.StructType
    grain: tuple[str, ...]
    comment: str
    partition_columns: tuple[str, ...] = ()
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def column_names(self) -> list[str]:
        return [f.name for f in self.schema.fields]

    def __post_init__(self) -> None:
        names = set(self.column_names)
        missing = [c for c in (*self.grain, *self.partition_columns) if c not in names]
        if missing:
            raise ValueError(f"table {self.name}: grain/partition columns not in schema: {missing}")
