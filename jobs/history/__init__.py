"""Gold stage group_generations.

Every group's records live in one `__consumer_offsets` partition, so (partition, offset) orders them
totally. The generation history is a fold (coordinator_core.history.generations.fold_generations): each run
reads the group-level records that are new since the last committed run, as the decode stage stored them in
silver (nothing is decoded twice), and the new log events (change data feed ranges), the carried state of
the groups they touch (group_state.generations), and writes the rows that changed (MERGE) and the new
states. The groups are folded in Python with `jobs.common.per_group.per_bucket` (storms, replay and what-if
use it too); offset_events, its own fold per bucket of groups in jobs/offset_events/.

`inputs` reads a run's new records and log events (attributing member-scoped lines to their group), `fold`
is the per-group function, `stage` runs it and writes.
"""
