"""Golden byte vectors for `__consumer_offsets` records, each with where it comes from.

Provenance:
- "ref §8.x": hand-built from the published schemas in shared/reference/kafka-record-formats.md §8, whose
  batch framing and CRCs were cross-checked there with kafka-python's independent implementation.
- "franz-go #1105": bytes captured from a real Kafka 4.1.0 broker (offset commit value v4), quoted in that
  issue and in the reference §2.2.4.
- "kafka 4.4.0 classes": bytes printed by Kafka's own generated classes (MessageUtil.toVersionPrefixedBytes)
  in the kafka-group-coordinator 4.4.0 jar, run by hand while writing this module.
Expected decoded values are written out by hand from those sources, never produced by our decoder.
"""

from __future__ import annotations

T = 1_700_000_000_000  # 0x0000018BCFE56800

OFFSET_KEY_T1 = "000100086d792d67726f757000086d792d746f70696300000000"  # ref §8.1
OFFSET_KEY_T0 = "000000086d792d67726f757000086d792d746f70696300000000"  # ref §8.1 (type 0)
GROUP_KEY = "000200086d792d67726f7570"  # ref §8.1

# (name, hex, version, offset, leader_epoch, metadata, commit_ts, expire_ts, topic_id, provenance)
OFFSET_VALUES = [
    # A field the version does not have (leader epoch before v3, expire timestamp outside v1) is None;
    # a leader epoch the writer set to -1 ("none") stays -1.
    ("v0", "0000000000000000002a00000000018bcfe56800", 0, 42, None, "", T, None, None, "ref §8.2"),
    ("v1", "0001000000000000002a00000000018bcfe568000000018bd50bc400", 1, 42, None, "", T, T + 86_400_000, None,
     "ref §8.2"),
    ("v2", "0002000000000000002a00000000018bcfe56800", 2, 42, None, "", T, None, None, "ref §8.2"),
    ("v3", "0003000000000000002a0000000500000000018bcfe56800", 3, 42, 5, "", T, None, None, "ref §8.2"),
    ("v3-meta", "0003000000000000002affffffff00046d6574610000018bcfe56800", 3, 42, -1, "meta", T, None, None,
     "ref §8.2"),
    ("v4", "0004000000000000002a00000005010000018bcfe5680000", 4, 42, 5, "", T, None, None, "ref §8.2"),
    ("v4-topic-id", "0004000000000000002a00000005010000018bcfe568000100100102030405060708090a0b0c0d0e0f10",
     4, 42, 5, "", T, None, "AQIDBAUGBwgJCgsMDQ4PEA", "ref §8.2"),
    ("v4-kafka-4.1-broker", "0004000000000021d4a8ffffffff010000019964f2d83600", 4, 2217128, -1, "",
     1758335260726, None, None, "franz-go #1105"),
]

GROUP_VALUE_V3 = (  # ref §8.3: one consumer member, range, generation 1
    "00030008636f6e73756d657200000001000572616e67650003632d310000018bcfe56800000000010003632d31ffff000163000a2f31"
    "32372e302e302e31000493e00000afc80000001e00030000000100086d792d746f706963ffffffff00000000ffffffffffff0000001c"
    "00030000000100086d792d746f7069630000000100000000ffffffff"
)
SUBSCRIPTION_V3 = "000300000001" "00086d792d746f706963" "ffffffff" "00000000" "ffffffff" "ffff"  # ref §8.3
ASSIGNMENT_V3 = "000300000001" "00086d792d746f706963" "00000001" "00000000" "ffffffff"  # ref §8.3
EMPTY_GROUP_VALUE_V3 = "00030008636f6e73756d657200000002ffffffff0000018bcfe5680000000000"  # ref §8.3
STICKY_USER_DATA_V1 = "00000001" "00086d792d746f706963" "00000002" "00000000" "00000001" "00000007"  # ref §8.3
COOPERATIVE_STICKY_USER_DATA = "00000007"  # ref §8.3

# kafka 4.4.0 classes: ConsumerGroupMemberMetadataValue v0 with clientId "c", clientHost "h", every nullable
# string set to "" (the generated class's defaults), rebalanceTimeoutMs -1, and ClassicMemberMetadata
# {sessionTimeoutMs 45000, supportedProtocols []} in tagged field 0 (note the int8 presence byte 01).
KIP848_MEMBER_WITH_CLASSIC = "00000101026302680101ffffffff01010007010000afc80100"
KIP848_MEMBER_PLAIN = "00000101026302680101ffffffff0100"
# A real Kafka 4.3.1 broker (the test bed's sample, __consumer_offsets-34 offset 0): a consumer-protocol
# member, whose tagged field 0 carries an explicit null ClassicMemberMetadata (uvarint presence 00).
KIP848_MEMBER_BROKER_4_3_1 = (
    "0000000014636f6e73756d65722d70726f746f636f6c2d610b2f3132372e302e302e3102166367682e636f6e73756d65722d70726f"
    "746f636f6c01000493e00001000100"
)

# ref §8.4: one RecordBatch v2 (CRC-32C 730210550) holding OFFSET_KEY_T1 + the v3 value above.
BATCH_V2 = (
    "00000000000000000000006a00000000022b8620f60000000000000000018bcfe568000000018bcfe56800ffffffffffffffffffff"
    "ffffffff000000017000000034000100086d792d67726f757000086d792d746f70696300000000300003000000000000002a00000005"
    "00000000018bcfe5680000"
)
# ref §8.4: the tombstone of the same key at offset 1 (CRC 1278582192).
BATCH_V2_TOMBSTONE = (
    "00000000000000010000005200000000024c359db00000000000000000018bcfe568000000018bcfe56800ffffffffffffffffffff"
    "ffffffff000000014000000034000100086d792d67726f757000086d792d746f706963000000000100"
)
# ref §8.5: legacy messages carrying OFFSET_KEY_T1 + the v1 value.
LEGACY_MAGIC1 = (
    "00000000000000000000004c3ffb415401000000018bcfe568000000001a000100086d792d67726f757000086d792d746f7069630000"
    "00000000001c0001000000000000002a00000000018bcfe568000000018bd50bc400"
)
LEGACY_MAGIC0 = (
    "000000000000000000000044b44e441100000000001a000100086d792d67726f757000086d792d746f706963000000000000001c0001"
    "000000000000002a00000000018bcfe568000000018bd50bc400"
)
