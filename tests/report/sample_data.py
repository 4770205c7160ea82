"""A small hand-made report input: a crash-looping group that stormed, a poll-timeout group, and a quiet one."""

from __future__ import annotations

import datetime as dt

import pandas as pd

from jobs.common.report_html import ReportData

T0 = dt.datetime(2026, 11, 20, 22, 0)


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
                     "members": members, "partitions_moved": 4})
    for g in range(10, 13):
        start = T0 + dt.timedelta(minutes=30 + g)
        gens.append({"cluster": "prod", "group_id": "billing", "generation": g, "started_at": start,
                     "ended_at": start + dt.timedelta(minutes=1), "duration_seconds": 300.0, "cause": "poll_timeout",
                     "cause_inferred": True, "members": ["instance billing-0", "instance billing-1"],
                     "partitions_moved": 6})
    gens.append({"cluster": "prod", "group_id": "audit", "generation": 1, "started_at": T0, "ended_at": None,
                 "duration_seconds": 3.0, "cause": "first_generation", "cause_inferred": True,
                 "members": ["audit@/10.0.1.1"], "partitions_moved": 0})
    storms = pd.DataFrame([
        {"cluster": "prod", "group_id": "orders", "window_start": T0 + dt.timedelta(minutes=2),
         "window_end": T0 + dt.timedelta(minutes=14), "rebalances": 6, "total_rebalance_seconds": 105.0,
         "stalled_seconds": 105.0, "dominant_cause": "new_member", "flapping_members": ["orders-worker@/10.0.0.7"],
         "lockstep_id": None, "severity": 64.4},
        {"cluster": "prod", "group_id": "billing", "window_start": T0 + dt.timedelta(minutes=40),
         "window_end": T0 + dt.timedelta(minutes=43), "rebalances": 3, "total_rebalance_seconds": 900.0,
         "stalled_seconds": 900.0, "dominant_cause": "poll_timeout", "flapping_members": [],
         "lockstep_id": None, "severity": 59.5},
    ])
    fleet = pd.DataFrame([
        {"cluster": "prod", "group_id": "orders", "rebalances": 6, "storms": 1, "total_rebalance_seconds": 105.0,
         "dominant_cause": "new_member"},
        {"cluster": "prod", "group_id": "billing", "rebalances": 3, "storms": 1, "total_rebalance_seconds": 900.0,
         "dominant_cause": "poll_timeout"},
        {"cluster": "prod", "group_id": "audit", "rebalances": 1, "storms": 0, "total_rebalance_seconds": 3.0,
         "dominant_cause": "first_generation"},
    ])
    whatif = pd.DataFrame([
        {"cluster": "prod", "group_id": "orders", "assignor": a, "static_membership": s, "partitions_moved": moved,
         "paused_partitions": paused}
        for a, s, moved, paused in [("range", False, 24, 72), ("range", True, 0, 0),
                                    ("cooperative-sticky", False, 12, 12), ("cooperative-sticky", True, 0, 0),
                                    ("roundrobin", False, 30, 72)]
    ])
    return ReportData(fleet, storms, pd.DataFrame(gens), whatif, generated_at=T0 + dt.timedelta(hours=1),
                      source="hand-made test data")
