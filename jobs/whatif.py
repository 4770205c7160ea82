"""Gold stages on the generations a run adds: assignment_replay and assignor_whatif.

Assignment replay is per generation and needs no state: each consumer-protocol generation whose members the
run stored (the new group_members rows, read as the table's change data feed over the run's version range)
is replayed with Kafka's assignor from its decoded members (coordinator_core.replay.replay_stored_generation;
no record bytes are decoded again). group_members keeps only the latest GroupMetadata record of a
generation, so a replay row is one per generation too: a generation stored again (a static member
replaced without a rebalance) is replayed from its latest record and the rows of its earlier record go (the
change data feed's deletes of group_members name that record).

The what-if replay is a fold (coordinator_core.replay.fold_whatif): each group's carried state
(``group_state.whatif``: partition counts so far, each assignor's last assignment with and without static
membership, the counterfactual's cursor, the open generations) plus the generation rows the run inserted,
amended or deleted give the what-if rows to upsert or delete. A group whose changes reach a generation
already folded into its state is replayed again from its rows in group_generations (rare).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from jobs.common.delta_io import Tables
from jobs.common.group_state import StateWrites, clear_state, merge_state
from jobs.common.per_group import DEFAULT_BUCKETS, GROUP_KEY, GroupRows, per_bucket
from jobs.common.progress import step
from jobs.storms import (
    DEFAULT_REOPEN_HOURS,
    changed_rows_and_removed_keys,
    fold_groups,
    fold_output_spec,
    group_of,
    plain_records,
    plain_value,
)
from schemas import GROUP_MEMBERS
from schemas.gold import ASSIGNMENT_REPLAY, ASSIGNOR_WHATIF

#: The group_state column this stage owns.
STATE_COLUMN = "whatif"


@dataclass(frozen=True)
class ReplayResult:
    #: generations replayed this run, and how many of them did not match the stored assignment
    replayed_generations: int
    replay_mismatches: int
    #: groups whose what-if replay was continued (every group with a changed generation row)
    whatif_groups: int
    whatif_rows_written: int
    whatif_rows_deleted: int
    #: groups replayed again from their whole history (a change before their carried state)
    groups_recomputed: int
    #: of the mismatches, those no reason explains (not the leader's library or client version); and the
    #: generations whose members shared their sticky assignor's state (a `shared_sticky_state` finding)
    replay_unexplained: int = 0
    shared_sticky_state: int = 0
    #: generations whose replay gave the stored assignment
    replay_matches: int = 0

    def counts(self) -> dict[str, int]:
        """The replay's figures by name (the run's JSON summary)."""
        return {"generations_replayed": self.replayed_generations, "matches": self.replay_matches,
                "mismatches_explained": self.replay_mismatches - self.replay_unexplained,
                "mismatches_unexplained": self.replay_unexplained,
                "not_replayable": self.replayed_generations - self.replay_matches - self.replay_mismatches,
                "shared_sticky_state": self.shared_sticky_state}

    def replay_summary(self) -> str:
        """`119 generations replayed (119 match, 0 mismatches explained by the leader's library or version, 0
        unexplained; 6 with members sharing their sticky assignor's state)`."""
        explained = self.replay_mismatches - self.replay_unexplained
        other = self.replayed_generations - self.replay_matches - self.replay_mismatches
        text = (f"{self.replayed_generations} generations replayed ({self.replay_matches} match, {explained} "
                f"mismatches explained by the leader's library or version, {self.replay_unexplained} unexplained"
                + (f", {other} not replayable" if other else ""))
        if self.shared_sticky_state:
            text += f"; {self.shared_sticky_state} with members sharing their sticky assignor's state"
        return text + ")"


# ----------------------------------------------------------------------------------------------
# Assignment replay


def member_changes(tables: Tables, since: Mapping[str, int] | None) -> tuple[DataFrame, DataFrame]:
    """group_members rows the run stored (all of them when rebuilding), and those it withdrew: the members
    of an earlier record of a generation stored again (its change data feed's deletes)."""
    current = tables.version(GROUP_MEMBERS)
    none = tables.spark.createDataFrame([], GROUP_MEMBERS.schema)
    if since is None:
        return tables.read(GROUP_MEMBERS, version=current), none
    after = since.get(GROUP_MEMBERS.name, 0)
    if after >= current:
        return none, none
    stored = tables.changes(GROUP_MEMBERS, after, current)
    if after <= 0:
        return stored, none
    withdrawn = (tables.spark.read.format("delta").option("readChangeFeed", "true")
                 .option("startingVersion", after + 1).option("endingVersion", current)
                 .load(tables.path(GROUP_MEMBERS)).where(F.col("_change_type") == "delete")
                 .select(*GROUP_MEMBERS.column_names))
    return stored, withdrawn


def withdrawn_replay_keys(withdrawn: DataFrame) -> DataFrame:
    """The assignment_replay keys of withdrawn member rows: the rows replayed from the earlier record (one
    per member, or one with member id '' when it could not be replayed)."""
    record: list[Column | str] = [*GROUP_KEY, "generation", F.col("source_offset").alias("record_offset"),
                                  F.coalesce("protocol", F.lit("")).alias("assignor")]
    return (withdrawn.select(*record, "member_id")
            .unionByName(withdrawn.select(*record, F.lit("").alias("member_id")))
            .distinct().select(*ASSIGNMENT_REPLAY.grain))


def members_to_replay(members: DataFrame, changed_generations: DataFrame) -> DataFrame:
    """The members of each consumer-protocol generation to replay, with their place in the record
    (`member_index`): the latest record of the generation among the rows.

    The member order decides the leader's HashMap order, hence some assignments; group_members does not
    keep it, the generation row (group_generations.members, in record order) does: each member takes its
    place from the run's row of the same generation stored by that record or an earlier one of it (the
    row's record_offset is the generation's first record). A member no row places sorts after the others
    by member id.
    """
    generation = [*GROUP_KEY, "generation"]
    latest = Window.partitionBy(*generation)
    stored = (members.where(F.col("protocol_type") == "consumer")
              .withColumn("_latest", F.max("source_offset").over(latest))
              .where(F.col("source_offset") == F.col("_latest")).drop("_latest"))
    places = (changed_generations
              .where((F.col("group_protocol") == "classic") & ~F.col("_deleted") & F.col("record_offset").isNotNull())
              .select(*[F.col(c).alias(f"_p_{c}") for c in generation], F.col("record_offset").alias("_row_offset"),
                      F.posexplode(F.transform("members", lambda m: m["member_id"])).alias("member_index",
                                                                                            "_p_member_id")))
    same = [F.col(c) == F.col(f"_p_{c}") for c in [*generation, "member_id"]]
    condition = same[0]
    for c in [*same[1:], F.col("_row_offset") <= F.col("source_offset")]:
        condition = condition & c
    ranked = stored.join(places, on=condition, how="left")
    newest_row = Window.partitionBy(*generation, "member_id").orderBy(F.col("_row_offset").desc_nulls_last())
    return (ranked.withColumn("_rank", F.row_number().over(newest_row)).where(F.col("_rank") == 1)
            .select(*GROUP_MEMBERS.column_names, "member_index"))


def _pairs(partitions: Any) -> tuple[tuple[str, int], ...] | None:
    return None if partitions is None else tuple((p["topic"], int(p["partition"])) for p in partitions)


def _int(value: Any) -> int | None:
    """An integer column's value (pandas gives a float when the column has nulls)."""
    return None if value is None else int(value)


def _replay_fn(members: pd.DataFrame) -> GroupRows:
    """One group's members to replay (see `members_to_replay`) -> assignment_replay rows
    (coordinator_core.replay.replay_rows, with the cluster)."""
    from coordinator_core.replay import StoredMember, replay_rows, replay_stored_generation

    rows: GroupRows = []
    by_generation: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for m in plain_records(members):
        by_generation.setdefault((int(m["generation"]), int(m["source_offset"])), []).append(m)
    for (generation, offset), stored in sorted(by_generation.items(), key=lambda kv: kv[0][1]):
        stored.sort(key=lambda m: (m["member_index"] is None, m["member_index"] or 0, m["member_id"]))
        first = stored[0]
        r = replay_stored_generation(generation, first["protocol_type"], first["protocol"], [
            StoredMember(m["member_id"], m["group_instance_id"], _int(m["subscription_version"]),
                         None if m["subscribed_topics"] is None else tuple(m["subscribed_topics"]),
                         None if m["subscription_user_data"] is None else bytes(m["subscription_user_data"]),
                         _pairs(m["owned_partitions"]), _int(m["subscription_generation"]), m["rack_id"],
                         _pairs(m["assigned_partitions"]), m["protocol_error"], m["client_id"],
                         _int(m["assignment_version"]),
                         None if m["assignment_user_data"] is None else bytes(m["assignment_user_data"]),
                         bool(m["is_leader"])) for m in stored])
        rows.extend({"cluster": first["cluster"], **row.to_dict()} for row in replay_rows(first["group_id"], offset, r))
    return rows


def assignment_replay_rows(members: DataFrame) -> DataFrame:
    """Members to replay (`members_to_replay`) -> assignment_replay rows."""
    return per_bucket(members, ASSIGNMENT_REPLAY, _replay_fn, DEFAULT_BUCKETS)


def _replay(tables: Tables, changed_generations: DataFrame, since: Mapping[str, int] | None
            ) -> tuple[int, int, int, int, int]:
    """Replay the run's new generations; the rows of the earlier record of a generation stored again go.
    Returns (generations replayed, mismatches, unexplained mismatches, generations with shared sticky state,
    matches)."""
    stored, withdrawn = member_changes(tables, since)
    replayed = assignment_replay_rows(members_to_replay(stored, changed_generations)).persist()
    try:
        record = F.struct(*GROUP_KEY, "generation", "record_offset")
        summary = replayed.groupBy().agg(
            F.countDistinct(record).alias("n"),
            F.countDistinct(F.when(F.col("status") == "mismatch", record)).alias("mismatches"),
            F.countDistinct(F.when(F.col("reason") == "unexplained", record)).alias("unexplained"),
            F.countDistinct(F.when(F.col("status") == "match", record)).alias("matches"),
            F.countDistinct(F.when(F.array_contains("findings", "shared_sticky_state"), record)).alias("shared"),
        ).first()
        deletions = withdrawn_replay_keys(withdrawn)
        rows = replayed.withColumn("_deleted", F.lit(False)).unionByName(
            deletions.select(*[F.col(c) if c in ASSIGNMENT_REPLAY.grain else F.lit(None).cast(
                ASSIGNMENT_REPLAY.schema[c].dataType).alias(c) for c in ASSIGNMENT_REPLAY.column_names])
            .withColumn("_deleted", F.lit(True)))
        n = int(summary["n"] or 0) if summary else 0
        if n or not deletions.isEmpty():
            tables.upsert(ASSIGNMENT_REPLAY, rows, delete_flag="_deleted")
        if not summary:
            return n, 0, 0, 0, 0
        return (n, int(summary["mismatches"] or 0), int(summary["unexplained"] or 0), int(summary["shared"] or 0),
                int(summary["matches"] or 0))
    finally:
        replayed.unpersist()


# ----------------------------------------------------------------------------------------------
# What-if

_WHATIF_FOLD = fold_output_spec(
    "_whatif_fold_output", ASSIGNOR_WHATIF,
    T.StructField("_deleted", T.BooleanType()), T.StructField("_kind", T.StringType()),
    T.StructField("_state", T.BinaryType()))

#: The columns of a what-if row's key within its group (coordinator_core.replay.WhatIfKey).
_WHATIF_KEY = ("generation", "assignor", "static_membership")

_WHATIF_MEMBER = ("member_id", "group_instance_id", "client_id", "client_host", "subscribed_topics",
                  "assigned_partitions", "session_timeout_ms")


def whatif_inputs(generations: DataFrame) -> DataFrame:
    """Changed generation rows (with `_deleted`) -> what the what-if fold reads of them."""
    return generations.select(
        *GROUP_KEY, "group_protocol", "generation", "record_offset", "outcome", "protocol_type",
        "rebalance_started_at", "stabilized_at", "assignment_stored_at",
        F.transform("members", lambda m: F.struct(*[m[c].alias(c) for c in _WHATIF_MEMBER])).alias("members"),
        "_deleted")


def _whatif_fn(reopen: dt.timedelta) -> Callable[[bool], Callable[[pd.DataFrame, pd.DataFrame], GroupRows]]:
    def make(from_scratch: bool) -> Callable[[pd.DataFrame, pd.DataFrame], GroupRows]:
        def run(rows: pd.DataFrame, held: pd.DataFrame) -> GroupRows:
            from coordinator_core.replay import (
                WhatIfStateVersionError,
                dump_whatif_state,
                fold_whatif,
                load_whatif_state,
            )

            if rows.empty:
                return []
            cluster, group = group_of(rows, held)
            # Every column named: pandas fills a missing one with NaN.
            marker = {**dict.fromkeys(_WHATIF_FOLD.column_names), "cluster": cluster, "group_id": group}
            try:
                state = (None if from_scratch or held.empty
                         else load_whatif_state(plain_value(held[STATE_COLUMN].iloc[0])))
            except WhatIfStateVersionError:
                return [{**marker, "_kind": "rebuild"}]
            changed, removed = changed_rows_and_removed_keys(rows)
            result = fold_whatif(state, changed, removed, reopen=reopen)
            if result.rebuild_needed or result.state is None:
                return [{**marker, "_kind": "rebuild"}]
            out: GroupRows = [{**marker, **r.to_dict(), "_deleted": False, "_kind": "row"} for r in result.rows]
            out += [{**marker, **dict(zip(_WHATIF_KEY, key, strict=True)), "_deleted": True, "_kind": "row"}
                    for key in result.removed]
            out.append({**marker, "_kind": "state", "_state": dump_whatif_state(result.state)})
            return out

        return run

    return make


def _whatif(tables: Tables, changed_generations: DataFrame, run_id: str, rebuild: bool,
            reopen: dt.timedelta, pending: StateWrites | None = None) -> tuple[int, int, int, int]:
    """Continue every touched group's what-if replay. Returns (groups, rows written, rows deleted, groups
    replayed from their whole history)."""
    out = fold_groups(tables, changed_generations, whatif_inputs, _WHATIF_FOLD, _whatif_fn(reopen), STATE_COLUMN,
                      ASSIGNOR_WHATIF, rebuild)
    try:
        summary = out.groupBy().agg(
            F.sum(F.when(F.col("_kind") == "state", 1).otherwise(0)).alias("groups"),
            F.sum(F.when((F.col("_kind") == "row") & ~F.col("_deleted"), 1).otherwise(0)).alias("written"),
            F.sum(F.when((F.col("_kind") == "row") & F.col("_deleted"), 1).otherwise(0)).alias("deleted"),
            F.sum(F.when(F.col("_kind") == "rebuild", 1).otherwise(0)).alias("recomputed")).first()
        if summary is None or not summary["groups"]:
            return 0, 0, 0, 0
        if summary["written"] or summary["deleted"]:
            tables.upsert(ASSIGNOR_WHATIF, out.where(F.col("_kind") == "row").select(
                *ASSIGNOR_WHATIF.column_names, "_deleted"), delete_flag="_deleted")
        merge_state(tables, out.where(F.col("_kind") == "state").select(
            *GROUP_KEY, F.col("_state").alias(STATE_COLUMN)), [STATE_COLUMN], run_id, pending)
        return (int(summary["groups"]), int(summary["written"] or 0), int(summary["deleted"] or 0),
                int(summary["recomputed"] or 0))
    finally:
        out.unpersist()


def run_replay_and_whatif(tables: Tables, changed_generations: DataFrame, run_id: str,
                          since: Mapping[str, int] | None, *,
                          reopen_hours: float = DEFAULT_REOPEN_HOURS,
                          pending: StateWrites | None = None) -> ReplayResult:
    """Replay the generations the run stored, and continue the what-if replay of every group with a changed
    generation row (state in group_state.whatif).

    `changed_generations`: the group_generations rows the run inserted or amended, and with `_deleted` true
    the keys of rows it deleted. `since`: table name -> the version the previous run committed (the run's
    new group_members rows are those after it); None rebuilds: assignment_replay, assignor_whatif and the
    carried states are emptied first and every row counts as new. `reopen_hours`: how long the generation
    history keeps a row open for amendment. `pending`: where the what-if states go when the stage writes its
    states together (None: group_state now).
    """
    rebuild = since is None
    if rebuild:
        tables.delete_where(ASSIGNMENT_REPLAY, "true")
        tables.delete_where(ASSIGNOR_WHATIF, "true")
        clear_state(tables, [STATE_COLUMN])
    # Both folds start from the changed generation rows (cached by the history stage: asking costs no read).
    # With none, what-if has nothing to continue, and replay has only the members withdrawn since `since`.
    unchanged = not rebuild and changed_generations.isEmpty()
    if unchanged and since is not None and not tables.data_changed_since(GROUP_MEMBERS,
                                                                          int(since.get(GROUP_MEMBERS.name, 0))):
        return ReplayResult(0, 0, 0, 0, 0, 0)
    with step("replay the generations stored this run"):
        replayed, mismatches, unexplained, shared, matches = _replay(tables, changed_generations, since)
    if unchanged:
        return ReplayResult(replayed, mismatches, 0, 0, 0, 0, unexplained, shared, matches)
    with step("what-if: continue each group's replay under every assignor"):
        groups, written, deleted, recomputed = _whatif(tables, changed_generations, run_id, rebuild,
                                                       dt.timedelta(hours=reopen_hours), pending)
    return ReplayResult(replayed, mismatches, groups, written, deleted, recomputed, unexplained, shared, matches)
