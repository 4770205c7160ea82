"""A small hand-made report input: a crash-looping group that stormed, a poll-timeout group whose causes
were inferred (no log line), and a quiet one."""

from __future__ import annotations

import datetime as dt

import pandas as pd

from jobs.common.report_html import ReportData

T0 = dt.datetime(2026, 11, 20, 22, 0)

#: The client's own words for the crash loop's session timeouts (a broker line, as Kafka 3.9 prints it).
SESSION_TIMEOUT_LINE = ("Member orders-worker-7-1b2c in group orders has failed, removing it from the group "
                        "(reason: removing member orders-worker-7-1b2c on heartbeat expiration)")


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
         "dominant_cause": "session_timeout", "assignor": "range"},
        {"cluster": "prod", "group_id": "billing", "rebalances": 3, "storms": 1, "total_rebalance_seconds": 900.0,
         "dominant_cause": "poll_timeout", "assignor": "cooperative-sticky"},
        {"cluster": "prod", "group_id": "audit", "rebalances": 1, "storms": 0, "total_rebalance_seconds": 3.0,
         "dominant_cause": "unknown", "assignor": "range"},
    ])
    # orders: 6 generations replayed, static membership absorbs 2, 3, 4 and 5 (the crash-looping member back
    # within its session timeout each time).
    whatif = pd.DataFrame([
        {"cluster": "prod", "group_id": "orders", "assignor": a, "static_membership": s,
         "generations": 2 if s else 6, "partitions_moved": moved, "paused_partitions": paused,
         "absorbed_generations": [2, 3, 4, 5]}
        for a, s, moved, paused in [("range", False, 24, 72), ("range", True, 0, 0),
                                    ("cooperative-sticky", False, 12, 12), ("cooperative-sticky", True, 0, 0),
                                    ("roundrobin", False, 30, 72)]
    ])
    return ReportData(fleet, storms, pd.DataFrame(gens), whatif, generated_at=T0 + dt.timedelta(hours=1),
                      source="hand-made test data")
