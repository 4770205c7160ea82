"""SQL views for the common audit questions, created in the catalog database after each nightly run.

Each view is one question an operator asks; the README shows them with their output on the sample:

    SELECT * FROM consumer_group_history.v_rebalance_summary ORDER BY rebalances DESC;
"""

from __future__ import annotations

from pyspark.sql import SparkSession

#: view name -> (what it answers, SELECT over the tables of `{db}`)
VIEWS: dict[str, tuple[str, str]] = {
    "v_rebalance_summary": (
        "How often did each group rebalance, why, and how long did it spend rebalancing?",
        """
        SELECT cluster, group_id, count(*) AS rebalances,
               round(sum(coalesce(rebalance_ms, 0)) / 1000.0, 1) AS rebalance_seconds,
               max_by(cause, coalesce(rebalance_started_at, assignment_stored_at)) AS last_cause,
               sum(CASE WHEN cause_inferred THEN 0 ELSE 1 END) AS explained_by_logs,
               min(coalesce(rebalance_started_at, assignment_stored_at)) AS first_seen,
               max(coalesce(rebalance_started_at, assignment_stored_at)) AS last_seen
        FROM {db}.group_generations
        WHERE outcome IN ('stable', 'empty', 'never_completed')
        GROUP BY cluster, group_id
        """,
    ),
    "v_rebalance_causes": (
        "Which causes make the fleet rebalance?",
        """
        SELECT cluster, cause, cause_inferred, count(*) AS rebalances, count(DISTINCT group_id) AS groups
        FROM {db}.group_generations
        WHERE outcome IN ('stable', 'empty', 'never_completed')
        GROUP BY cluster, cause, cause_inferred
        """,
    ),
    "v_storms": (
        "Which groups stormed, when, why, and who flapped? (most severe first)",
        """
        SELECT cluster, group_id, window_start, window_end, rebalances,
               round(stalled_seconds, 1) AS stalled_seconds, dominant_cause, flapping_members, lockstep_id,
               severity
        FROM {db}.rebalance_storms
        """,
    ),
    "rebalance_cost_partitions": (
        "One row per rebalance and partition that paused: from and to member, stop and resume with their bounds "
        "and sources, pause, the rate used and records delayed (rebalance_cost.partitions, exploded)",
        """
        SELECT c.cluster, c.group_id, c.group_protocol, c.generation, c.record_offset, c.restarted_member_id,
               c.rebalance_at, c.protocol_kind, p.*
        FROM {db}.rebalance_cost c LATERAL VIEW explode(c.partitions) x AS p
        """,
    ),
    "v_rebalance_cost": (
        "Which groups paid most for their rebalances? (paused partition-seconds and records delayed per group)",
        """
        SELECT cluster, group_id, count(*) AS rebalances, sum(partitions_paused) AS partitions_paused,
               round(sum(coalesce(partition_seconds, partition_seconds_low)), 3) AS paused_partition_seconds,
               round(sum(partition_seconds_low), 3) AS paused_partition_seconds_low,
               round(sum(partition_seconds_high), 3) AS paused_partition_seconds_high,
               sum(records_delayed) AS records_delayed, max(pause_ms) AS longest_pause_ms,
               count_if(inferred) AS rebalances_inferred, min(rebalance_at) AS first_seen,
               max(rebalance_at) AS last_seen
        FROM {db}.rebalance_cost
        GROUP BY cluster, group_id
        """,
    ),
    "v_flapping_members": (
        "Which clients (client id @ host, or static instance id) rejoin their group again and again?",
        """
        SELECT cluster, group_id, member, count(*) AS storms, sum(rebalances) AS rebalances_in_those_storms
        FROM {db}.rebalance_storms LATERAL VIEW explode(flapping_members) f AS member
        GROUP BY cluster, group_id, member
        """,
    ),
    "v_member_changes": (
        "Who joined, who left, and who came back under a new member id, per generation?",
        """
        SELECT cluster, group_id, generation, coalesce(rebalance_started_at, assignment_stored_at) AS at, cause,
               members_joined, members_left, static_restarts, size(partitions_moved) AS partitions_moved
        FROM {db}.group_generations
        """,
    ),
    "v_latest_offsets": (
        "What is each group's latest committed offset per partition (aborted transactions excluded)?",
        """
        SELECT cluster, group_id, topic, topic_partition, committed_offset, commit_timestamp, is_tombstone
        FROM (SELECT *, row_number() OVER (PARTITION BY cluster, group_id, topic, topic_partition
                                           ORDER BY offset DESC) AS newest
              FROM {db}.offset_commits
              WHERE coalesce(transaction_outcome, 'committed') = 'committed')
        WHERE newest = 1
        """,
    ),
    "v_assignment_mismatches": (
        "Which stored assignments differ from what the leader's assignor computes, and why (the leader's client "
        "library, the engine replayed)?",
        """
        SELECT cluster, group_id, generation, assignor, status, reason, detail, matching_version, leader_client,
               engine, count(*) AS members, sum(size(missing_partitions)) AS partitions_differing
        FROM {db}.assignment_replay
        WHERE status <> 'match'
        GROUP BY cluster, group_id, generation, assignor, status, reason, detail, matching_version, leader_client,
                 engine
        """,
    ),
    "v_whatif": (
        "Over each group's history, how many partitions would each assignor (with or without static "
        "membership) have moved and paused? (Kafka's Java assignors; leader_clients names the libraries the "
        "group's leaders actually ran when one was not Java.)",
        """
        SELECT w.cluster, w.group_id, w.assignor, w.static_membership, count(*) AS rebalances,
               sum(w.partitions_moved) AS partitions_moved, sum(w.paused_partitions) AS paused_partitions,
               max(w.balance) AS worst_balance, first(l.leader_clients) AS leader_clients
        FROM {db}.assignor_whatif w
        LEFT JOIN (SELECT cluster, group_id, sort_array(collect_set(leader_client)) AS leader_clients
                   FROM {db}.assignment_replay
                   WHERE leader_client IS NOT NULL AND leader_client NOT IN ('java', 'unknown')
                   GROUP BY cluster, group_id) l
          ON w.cluster = l.cluster AND w.group_id = l.group_id
        GROUP BY w.cluster, w.group_id, w.assignor, w.static_membership
        """,
    ),
}


def create_views(spark: SparkSession, database: str) -> list[str]:
    """Create or replace every view in `database`; returns their names."""
    for name, (question, select) in VIEWS.items():
        comment = question.replace("\\", "\\\\").replace("'", "\\'")  # Spark SQL escapes with backslashes
        spark.sql(f"CREATE OR REPLACE VIEW `{database}`.`{name}` COMMENT '{comment}' AS "
                  + select.format(db=f"`{database}`"))
    return list(VIEWS)
