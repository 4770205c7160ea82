"""`cgh group GROUP`: a group's generations, who joined and left, why (with the log line that says so), which
partitions moved."""

from __future__ import annotations

import argparse
import datetime as dt
import difflib
import os
import sys
from collections.abc import Sequence
from typing import Any

from jobs.cli.output import format_table, print_json_lines, rows_of, utc_text
from jobs.cli.warehouse import (
    EXIT_NOT_FOUND,
    EXIT_OK,
    Warehouse,
    find_warehouse,
    parse_since,
    sql_string,
    sql_timestamp,
)

#: group_generations columns the timeline shows (and --json prints), in this order
GROUP_COLUMNS = (
    "cluster", "group_id", "group_protocol", "generation", "record_offset", "at", "outcome", "protocol",
    "member_count", "members_joined", "members_left", "static_restarts", "rebalance_ms", "cause", "causes",
    "cause_inferred", "inference", "trigger_member_id", "evidence", "partitions_moved",
)


#: columns added after warehouses were written: shown when the table has them (a nightly run adds them)
OPTIONAL_GROUP_COLUMNS = ("coordinator_loads",)


def _has_column(warehouse: Warehouse, table: str, column: str) -> bool:
    from deltalake import DeltaTable

    if table not in warehouse.names:
        return False
    return column in {f.name for f in DeltaTable(os.path.join(warehouse.location, table)).schema().fields}


def group_timeline(warehouse: Warehouse, group_id: str, cluster: str | None, since: dt.datetime | None
                   ) -> list[dict[str, Any]]:
    """The group's generations, oldest first per cluster, each with its cause's evidence line."""
    at = "coalesce(rebalance_started_at, stabilized_at, assignment_stored_at)"
    where = [f"group_id = {sql_string(group_id)}"]
    if cluster:
        where.append(f"cluster = {sql_string(cluster)}")
    if since:
        where.append(f"{at} >= {sql_timestamp(since)}")
    shown = GROUP_COLUMNS + tuple(c for c in OPTIONAL_GROUP_COLUMNS if _has_column(warehouse, "group_generations", c))
    columns = ", ".join(f"{at} AS at" if c == "at" else c for c in shown)
    table = warehouse.query(
        f"SELECT {columns} FROM group_generations WHERE {' AND '.join(where)} "
        f"ORDER BY cluster, {at} ASC NULLS LAST, group_protocol, generation, record_offset",
        ["group_generations"],
    )
    _, rows = rows_of(table)
    replays = generation_replays(warehouse, group_id, cluster)
    costs = generation_costs(warehouse, group_id, cluster)
    for row in rows:
        row["evidence_line"] = evidence_line(row["cause"], row.pop("evidence") or [])
        row["replay"] = replays.get((row["cluster"], row["generation"], row["record_offset"]))
        row["cost"] = costs.get((row["cluster"], row["group_protocol"], row["generation"], row["record_offset"]), [])
    return rows


def generation_costs(warehouse: Warehouse, group_id: str, cluster: str | None
                     ) -> dict[tuple[str, str, int, int], list[dict[str, Any]]]:
    """(cluster, group protocol, generation, record offset) -> the rebalance's cost rows (the generation
    change, and any static member replaced without one); none in a warehouse without rebalance_cost."""
    if "rebalance_cost" not in warehouse.names:
        return {}
    where = f"group_id = {sql_string(group_id)}" + (f" AND cluster = {sql_string(cluster)}" if cluster else "")
    table = warehouse.query(
        "SELECT cluster, group_protocol, generation, record_offset, protocol_kind, partitions_paused, "
        "partitions_kept, pause_ms, pause_low_ms, pause_high_ms, partition_seconds, partition_seconds_low, "
        "partition_seconds_high, records_delayed, rate_coverage, window_start_source, window_end_source "
        f"FROM rebalance_cost WHERE {where} ORDER BY restarted_member_id NULLS FIRST", ["rebalance_cost"])
    out: dict[tuple[str, str, int, int], list[dict[str, Any]]] = {}
    for row in rows_of(table)[1]:
        key = (row.pop("cluster"), row.pop("group_protocol"), row.pop("generation"), row.pop("record_offset"))
        out.setdefault(key, []).append(row)
    return out


def _ms_text(ms: int | None) -> str:
    return "?" if ms is None else f"{ms / 1000:.3f}s"


def cost_lines(costs: Sequence[dict[str, Any]]) -> list[str]:
    """A rebalance's cost under its generation: the group's pause with its bounds, partitions paused and kept,
    paused partition-seconds and records delayed (only where something paused)."""
    lines = []
    for c in costs:
        if not c["partitions_paused"]:
            continue
        pause = (f"paused {_ms_text(c['pause_ms'])} [{_ms_text(c['pause_low_ms'])}..{_ms_text(c['pause_high_ms'])}]"
                 if c["pause_ms"] is not None else
                 f"paused {_ms_text(c['pause_low_ms'])}..{_ms_text(c['pause_high_ms'])} (bounds only)")
        seconds = c["partition_seconds"] if c["partition_seconds"] is not None else c["partition_seconds_low"]
        delayed = ("records delayed ?" if c["records_delayed"] is None
                   else f"~{c['records_delayed']} records delayed")
        kept = f", {c['partitions_kept']} kept" if c["partitions_kept"] else ""
        lines.append(f"cost      {c['protocol_kind']}: {pause}, {c['partitions_paused']} partitions{kept}, "
                     f"{seconds:.3f} partition-s, {delayed} (from {c['window_start_source']} to "
                     f"{c['window_end_source']})")
    return lines


#: assignment_replay columns a generation's replay line shows (engine and leader_client came later: a warehouse
#: whose last nightly run predates them shows the replay without them)
REPLAY_COLUMNS = ("status", "reason", "detail", "leader_client", "engine", "findings")


def generation_replays(warehouse: Warehouse, group_id: str, cluster: str | None
                       ) -> dict[tuple[str, int, int], dict[str, Any]]:
    """(cluster, generation, record offset) -> the generation's replay: status, reason, detail, the leader's
    client library, the engine replayed, findings."""
    if "assignment_replay" not in warehouse.names:
        return {}
    shown = [c for c in REPLAY_COLUMNS if _has_column(warehouse, "assignment_replay", c)]
    where = f"group_id = {sql_string(group_id)}" + (f" AND cluster = {sql_string(cluster)}" if cluster else "")
    table = warehouse.query(f"SELECT cluster, generation, record_offset, {', '.join(shown)} FROM assignment_replay "
                            f"WHERE {where}", ["assignment_replay"])
    _, rows = rows_of(table)
    out: dict[tuple[str, int, int], dict[str, Any]] = {}
    for row in rows:  # one row per member, the generation's columns alike on each
        out.setdefault((row.pop("cluster"), row.pop("generation"), row.pop("record_offset")),
                       {c: row.get(c) for c in REPLAY_COLUMNS})
    return out


def replay_line(replay: dict[str, Any] | None) -> list[str]:
    """The replay lines under a generation: what was replayed with which engine, and why a mismatch is one."""
    if not replay or replay["status"] is None:
        return []
    leader = f"leader {replay['leader_client']}, " if replay.get("leader_client") else ""
    engine = f"replayed with {replay['engine']}" if replay.get("engine") else "replayed"
    text = f"replay    {replay['status']} ({leader}{engine})"
    if replay["status"] != "match" and replay["reason"]:
        text += f": {replay['reason']}" + (f" - {replay['detail']}" if replay["detail"] else "")
    lines = [text]
    if "shared_sticky_state" in (replay.get("findings") or []):
        lines.append("finding   shared_sticky_state: members sent the same sticky user data (they share the "
                     "assignor's state: kafka-python < 3.0 or aiokafka, several consumers per process)")
    return lines


def evidence_line(cause: str | None, evidence: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The log line that best says why: the first with the row's cause class, else the first with any cause
    class (the rest of `group_generations.evidence` is the rebalance's own progress: stabilized, assigned)."""
    with_message = [e for e in evidence if e.get("message")]
    for wanted in (lambda e: cause is not None and e.get("cause_class") == cause,
                   lambda e: e.get("cause_class") is not None):
        for e in with_message:
            if wanted(e):
                return {k: e.get(k) for k in ("at", "source", "line_number", "event_type", "cause_class", "reason",
                                              "message")}
    return None


def close_group_names(warehouse: Warehouse, group_id: str) -> tuple[list[str], dict[str, list[str]]]:
    """Group ids like `group_id` (for the "not found" message), and the clusters of every group."""
    table = warehouse.query("SELECT DISTINCT cluster, group_id FROM group_generations", ["group_generations"])
    clusters: dict[str, list[str]] = {}
    for row in table.to_pylist():
        clusters.setdefault(row["group_id"], []).append(row["cluster"])
    names = list(clusters)
    close = [n for n in names if group_id.lower() in n.lower() and n != group_id]
    close += [n for n in difflib.get_close_matches(group_id, names, n=5, cutoff=0.6) if n not in close]
    return close[:8], clusters


def _moves_text(moves: Sequence[dict[str, Any]]) -> list[str]:
    """Partitions moved, one line per (from, to) pair: `topic 3,4,5  from -> to`."""
    pairs: dict[tuple[str, str], dict[str, list[int]]] = {}
    for m in moves:
        key = (m.get("from_member") or "(unassigned)", m.get("to_member") or "(unassigned)")
        pairs.setdefault(key, {}).setdefault(m["topic"], []).append(m["partition"])
    lines = []
    for (source, target), topics in pairs.items():
        partitions = "; ".join(f"{t} {','.join(str(p) for p in sorted(ps))}" for t, ps in sorted(topics.items()))
        lines.append(f"{partitions}  {source} -> {target}")
    return lines


def render_group(rows: Sequence[dict[str, Any]]) -> str:
    """The timeline: a table per cluster, each generation followed by who joined and left, the trigger, the
    partitions moved and the evidence line of its cause."""
    out: list[str] = []
    by_cluster: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_cluster.setdefault(row["cluster"], []).append(row)
    headers = ["generation", "at (UTC)", "outcome", "members", "joined", "left", "moved", "rebalance s", "cause"]
    for cluster, generations in by_cluster.items():
        first = generations[0]
        inferred = sum(1 for g in generations if g["cause_inferred"])
        out.append(f"group {first['group_id']} on {cluster}: {len(generations)} generations"
                   + (f", {inferred} with an inferred cause" if inferred else "")
                   + (f", assignor {_assignors(generations)}" if _assignors(generations) else ""))
        table_rows = []
        details: list[list[str]] = []
        for g in generations:
            cause = g["cause"] or ""
            if g["cause_inferred"]:
                cause += " (inferred)"
            generation = str(g["generation"])
            if g["group_protocol"] != "classic":  # a KIP-848 group epoch
                generation += f" ({g['group_protocol']})"
            table_rows.append([generation, g["at"], g["outcome"], g["member_count"], len(g["members_joined"] or []),
                               len(g["members_left"] or []), len(g["partitions_moved"] or []),
                               None if g["rebalance_ms"] is None else round(g["rebalance_ms"] / 1000, 3), cause])
            details.append(_details(g))
        table = format_table(headers, table_rows, right=[0]).split("\n")
        out.extend(table[:2])
        for text, detail in zip(table[2:], details, strict=True):
            out.append(text)
            out.extend("    " + d for d in detail)
        out.append("")
    return "\n".join(out).rstrip("\n")


def _details(g: dict[str, Any]) -> list[str]:
    """The lines under a generation's row: who joined and left, the inference, the trigger, the partitions
    moved, coordinator loads and the evidence line of its cause."""
    detail = [f"joined    {member}" for member in g["members_joined"] or []]
    detail.extend(f"left      {member}" for member in g["members_left"] or [])
    if g["cause_inferred"] and g["inference"]:
        detail.append(f"inferred  {g['inference']}")
    if g["trigger_member_id"]:
        detail.append(f"trigger   {g['trigger_member_id']}")
    detail.extend(f"moved     {move}" for move in _moves_text(g["partitions_moved"] or []))
    for load in g.get("coordinator_loads") or []:
        # Kafka loads a stable group as it was: the coordinator moved, no rebalance
        at = utc_text(load["at"]) if isinstance(load["at"], dt.datetime) else load["at"]
        detail.append(f"coordinator  loaded by broker {load['broker_id']} at {at}"
                      f" (__consumer_offsets-{load['offsets_partition']}, {load['cause_class']})")
    detail.extend(cost_lines(g.get("cost") or []))
    if g["member_count"]:  # an empty group's record has nothing to replay
        detail.extend(replay_line(g.get("replay")))
    line = g["evidence_line"]
    if line and line["source"]:
        detail.append(f"evidence  {os.path.basename(line['source'])}:{line['line_number']}  {line['message']}")
    elif line:  # a record, not a log line ("record:group_metadata", "offset 0")
        detail.append(f"evidence  {line['event_type']} {line['message']}"
                      + (f": {line['reason']}" if line.get("reason") else ""))
    elif not g["cause_inferred"] and g["cause"]:
        detail.append("evidence  (no log line kept)")
    return detail


def _assignors(generations: Sequence[dict[str, Any]]) -> str:
    seen: list[str] = []
    for g in generations:
        if g["protocol"] and g["protocol"] not in seen:
            seen.append(g["protocol"])
    return ", ".join(seen)


def command_group(args: argparse.Namespace, out: Any) -> int:
    warehouse = find_warehouse(args)
    since = parse_since(args.since) if args.since else None
    rows = group_timeline(warehouse, args.group, args.cluster, since)
    if not rows:
        close, clusters = close_group_names(warehouse, args.group)
        if args.group in clusters and args.cluster and args.cluster not in clusters[args.group]:
            print(f"cgh: group {args.group} has no generations on cluster {args.cluster} "
                  f"(it has on: {', '.join(sorted(clusters[args.group]))})", file=sys.stderr)
            return EXIT_NOT_FOUND
        if args.group in clusters:  # only --since left nothing: an answer, not an error
            if not args.json:
                print(f"group {args.group}: no generations since {utc_text(since)} UTC"  # type: ignore[arg-type]
                      + (f" on {args.cluster}" if args.cluster else ""), file=out)
            return EXIT_OK
        hint = f"; close names: {', '.join(close)}" if close else ""
        print(f"cgh: no group {args.group!r} in group_generations at {warehouse.location}{hint}", file=sys.stderr)
        return EXIT_NOT_FOUND
    if args.json:
        print_json_lines(rows, out)
    else:
        print(render_group(rows), file=out)
    return EXIT_OK
