"""Gold table `offset_events` as an incremental fold over each run's new rows.

`coordinator_core.history.offsets.offset_history` walks one group's whole archive commit by commit: it is
the oracle. The rule is continued run after run by `coordinator_core.history.offset_fold.continue_offsets`
from each group's carried state (group_state column `offsets`, typed `OFFSETS_STATE`, its version checked
on read), and the core's property tests hold it to the oracle however the archive is cut into runs. This
package brings that fold to the warehouse:

* `inputs`: what a run reads: the silver tables' and coordinator_events' rows since the last run (change
  feeds) as fold records, the deletion/expiry lines naming a group, and the cluster's group-less sweeps;
* `stage`: the touched groups (new records or lines, a decided transaction in a carried tail, a new sweep
  near a settled tombstone) with their state, the sweep lines near their tombstones, one cogrouped Arrow
  call per bucket of groups (`fold`), and the rows and states written;
* `fold`: the executor side: each group's inputs handed to `continue_offsets`, its rows and state back;
* `kinds`: the vocabulary they share (defined by the core fold).
"""
