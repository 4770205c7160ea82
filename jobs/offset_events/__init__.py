"""Gold table `offset_events` as an incremental fold over each run's new rows, computed column-wise.

`coordinator_core.history.offsets.offset_history` walks one group's whole archive commit by commit: it is
the oracle, and this stage must leave exactly its rows, however the archive was cut into runs. Here a run
reads only what is new (the silver tables' and coordinator_events' version ranges since the last run) and
the carried state of the groups that it touches (group_state column `offsets`, typed: `OFFSETS_STATE`), and
the walk becomes window functions over the night's rows:

* The group's *context* at a commit (generation in force, member count, whether it ever stored one) is the
  last context record before it: GroupMetadata, a KIP-848 epoch (its member count is a running sum of
  member joins and leaves), or a group tombstone that deletes the group. A context record that changes
  (generation, members), or deletes the group, ends every stall run: counting them gives each commit a
  *segment* number.
* Per partition, in log order, the previous commit (`lag`) gives rewinds and the delta of commits by
  non-members; a stall run is a stretch of commits of one offset inside one segment, numbered by a running
  sum of run starts and aggregated per run.
* Tombstones are classified by joining the deletion/expiry log lines within 5 s and the group's own
  tombstones within 1 s.
* The carried state enters as rows before the night's: one per partition (its last commit, the open run),
  and the group's context at the checkpoint.

What a later record or log line can still change is kept open: a stall run still going on (its row is
replaced when the run grows), a tombstone whose deleting log line or group tombstone may come later (its
inputs are carried and the row re-classified, within `reopen_hours` of the group's newest record or line),
and records whose meaning is not settled yet: a commit of an open transaction (an abort makes it vanish)
and a group tombstone no later record has shown to be a protocol conversion or a deletion. The group's
*checkpoint* is the first unsettled record: the state is the fold up to it, the records from it on are
carried as the tail and read again by the next run, and the rows they produced are provisional (replaced,
or withdrawn when the next run no longer produces them).

The package follows that flow: `inputs` (the run's new rows as fold records, log lines and sweeps),
`sequence` (the windowed walk: conversions, context, checkpoints, partition sequences, stall runs), `rows`
(offset_events rows: commits, stalls, classified tombstones), `state` (the carried state of each group),
and `stage` (the fold put together and written). `kinds` holds the vocabulary they share. Names with a
leading underscore are the package's own: its modules import them from one another, nothing outside does.
"""
