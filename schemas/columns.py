"""Column names shared by several tables (Kafka's vocabulary in snake_case).

`partition` and `offset` are always the position of the record in `__consumer_offsets`; the partition of
the *consumed* topic that an offset commit is about is `topic_partition`.
"""

from __future__ import annotations

CLUSTER = "cluster"
PARTITION = "partition"
OFFSET = "offset"
RECORD_TIMESTAMP = "record_timestamp"
GROUP_ID = "group_id"
MEMBER_ID = "member_id"
GENERATION = "generation"
TOPIC = "topic"
TOPIC_PARTITION = "topic_partition"
RECORD_TYPE = "record_type"
RECORD_KIND = "record_kind"
VALUE_VERSION = "value_version"
IS_TOMBSTONE = "is_tombstone"
PRODUCER_ID = "producer_id"
IS_TRANSACTIONAL = "is_transactional"
KEY = "key"
VALUE = "value"
RUN_ID = "run_id"

# transaction_outcome values (offset_commits)
TXN_COMMITTED = "committed"
TXN_ABORTED = "aborted"
TXN_OPEN = "open"
