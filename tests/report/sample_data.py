"""A small hand-made report input: a crash-looping group that stormed, a poll-timeout group whose causes
were inferred (no log line), and a quiet one, with what their rebalances cost (the quiet one's was not
measured)."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd

from jobs.common.report_html import ReportData

T0 = dt.datetime(2026, 11, 20, 22, 0)

#: The client's own words for the crash loop's session timeouts (a broker line, as Kafka 3.9 prints it).
SESSION_TIMEOUT_LINE = ("Member orders-worker-7-1b2c in group orders has failed, removing it from the group "
                        "(reason: removing member orders-worker-7-1b2c on heartbeat expiration)")


#: A fleet row's cost columns for a group without rebalance_cost rows (as jobs.report.fleet_frame fills them).
NO_COST = {"cost_rows": 0, "static_restarts": 0, "rebalances_paused": 0, "partitions_paused": 0,
           "paused_partition_seconds": 0.0, "paused_partition_seconds_low": 0.0, "paused_partition_seconds_high": 0.0,
           "records_delayed": np.nan, "longest_pause_ms": np.nan, "longest_pause_high_ms": np.nan, "cost_inferred": 0}

#: orders: 6 rebalances pausing 6 partitions each, 72 partition-seconds (2 s per paused partition), two of
#: them with bounds only (unbounded above); billing: 3 rebalances and a static restart, 18 partitions,
#: 900 partition-seconds, no consumption rate.
ORDERS_COST = {"cost_rows": 6, "static_restarts": 0, "rebalances_paused": 6, "partitions_paused": 36,
               "paused_partition_seconds": 72.0, "paused_partition_seconds_low": 60.0,
               "paused_partition_seconds_high": np.nan, "records_delayed": 12000.0, "longest_pause_ms": 3000.0,
               "longest_pause_high_ms": np.nan, "cost_inferred": 2}
BILLING_COST = {"cost_rows": 4, "static_restarts": 1, "rebalances_paused": 3, "partitions_paused": 18,
                "paused_partition_seconds": 900.0, "paused_partition_seconds_low": 900.0,
                "paused_partition_seconds_high": 1200.0, "records_delayed": np.nan, "longest_pause_ms": 300000.0,
                "longest_pause_high_ms": 400000.0, "cost_inferred": 0}


def sample_report_data() -> ReportData:
    gens = []
    for g in range(1, 7):  # orders: a member crash-looping every 2 minutes
        start = T0 + dt.timedelta(minutes=2 * g)
        members = ["orders-worker@/10.0.0.5", "orders-worker@/10.0.0.6"]
        if g % 2:
            members.append("orders-worker@/10.0.0.7")
        gens.append({"cluster": "prod", "group_id": "orders", "generation": g, "started_at": start,
                     "ended_at": start + dt.timedelta(minutes=2), "duration_seconds": 14.0 + g,
                     "cause": "new_member" if g % 2 else "session_timeout", "cause_inferred": False,
                     "members": members, "partitions_moved": 4, "trigger_member": f"orders-worker-7-{g}",
                     "evidence": "Adding new member" if g % 2 else SESSION_TIMEOUT_LINE})
    for g in range(10, 13):
        start = T0 + dt.timedelta(minutes=30 + g)
        gens.append({"cluster": "prod", "group_id": "billing", "generation": g, "started_at": start,
                     "ended_at": start + dt.timedelta(minutes=1), "duration_seconds": 300.0, "cause": "poll_timeout",
                     "cause_inferred": True, "members": ["instance billing-0", "instance billing-1"],
                     "partitions_moved": 6, "trigger_member": "billing-1-9f", "evidence": None})
    gens.append({"cluster": "prod", "group_id": "audit", "generation": 1, "started_at": T0, "ended_at": None,
                 "duration_seconds": 3.0, "cause": None, "cause_inferred": True,
                 "members": ["audit@/10.0.1.1"], "partitions_moved": 0, "trigger_member": None,
                 "evidence": None})
    storms = pd.DataFrame([
        {"cluster": "prod", "group_id": "orders", "window_start": T0 + dt.timedelta(minutes=2),
         "window_end": T0 + dt.timedelta(minutes=14), "rebalances": 6, "total_rebalance_seconds": 105.0,
         "stalled_seconds": 105.0, "dominant_cause": "session_timeout",
         "flapping_members": ["orders-worker@/10.0.0.7"], "lockstep_id": None, "severity": 64.4,
         "trigger_member": "orders-worker-7-2", "evidence": SESSION_TIMEOUT_LINE, "cause_inferred": False},
        {"cluster": "prod", "group_id": "billing", "window_start": T0 + dt.timedelta(minutes=40),
         "window_end": T0 + dt.timedelta(minutes=43), "rebalances": 3, "total_rebalance_seconds": 900.0,
         "stalled_seconds": 900.0, "dominant_cause": "poll_timeout", "flapping_members": [],
         "lockstep_id": None, "severity": 59.5, "trigger_member": "billing-1-9f", "evidence": None,
         "cause_inferred": True},
    ])
    fleet = pd.DataFrame([
        {"cluster": "prod", "group_id": "orders", "rebalances": 6, "storms": 1, "total_rebalance_seconds": 105.0,
         "dominant_cause": "session_timeout", "assignor": "range", **ORDERS_COST},
        {"cluster": "prod", "group_id": "billing", "rebalances": 3, "storms": 1, "total_rebalance_seconds": 900.0,
         "dominant_cause": "poll_timeout", "assignor": "cooperative-sticky", **BILLING_COST},
        {"cluster": "prod", "group_id": "audit", "rebalances": 1, "storms": 0, "total_rebalance_seconds": 3.0,
         "dominant_cause": "unknown", "assignor": "range", **NO_COST},
    ])
    # orders: 6 generations replayed, static membership absorbs 2, 3, 4 and 5 (the crash-looping member back
    # within its session timeout each time).
    whatif = pd.DataFrame([
        {"cluster": "prod", "group_id": "orders", "assignor": a, "static_membership": s,
         "generations": 2 if s else 6, "partitions_moved": moved, "paused_partitions": paused,
         "absorbed_generations": [2, 3, 4, 5], "paused_partition_seconds_estimate": 2.0 * paused}
        for a, s, moved, paused in [("range", False, 24, 72), ("range", True, 0, 0),
                                    ("cooperative-sticky", False, 12, 12), ("cooperative-sticky", True, 0, 0),
                                    ("roundrobin", False, 30, 72)]
    ])
    day = pd.Timestamp(T0.date())
    cost_per_day = pd.DataFrame([
        {"day": day, "cause": "new_member", "rebalances": 3, "paused_partition_hours": 30.0 / 3600,
         "at_low_bound": 1, "records_delayed": 5000.0},
        {"day": day, "cause": "session_timeout", "rebalances": 3, "paused_partition_hours": 42.0 / 3600,
         "at_low_bound": 1, "records_delayed": 7000.0},
        {"day": day, "cause": "poll_timeout", "rebalances": 2, "paused_partition_hours": 600.0 / 3600,
         "at_low_bound": 0, "records_delayed": np.nan},
        {"day": day, "cause": "static_restart", "rebalances": 1, "paused_partition_hours": 300.0 / 3600,
         "at_low_bound": 0, "records_delayed": np.nan},
    ])
    return ReportData(fleet, storms, pd.DataFrame(gens), whatif, generated_at=T0 + dt.timedelta(hours=1),
                      source="hand-made test data", cost_per_day=cost_per_day)
