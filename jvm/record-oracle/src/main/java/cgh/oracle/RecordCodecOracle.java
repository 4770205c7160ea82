// oracle jar set requires: kafka-share-coordinator
package cgh.oracle;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ConsumerProtocolAssignment;
import org.apache.kafka.common.message.ConsumerProtocolAssignmentJsonConverter;
import org.apache.kafka.common.message.ConsumerProtocolSubscription;
import org.apache.kafka.common.message.ConsumerProtocolSubscriptionJsonConverter;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.coordinator.group.generated.*;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Writes random `__consumer_offsets` records with Kafka's own generated message classes, one JSON line per
 * record: the record type, value version, the key and value bytes exactly as the group coordinator
 * serializes them (int16 type + key, int16 version + value), and Kafka's own JSON rendering of each.
 * The Python side decodes the bytes with coordinator_core and must reproduce every field, and its encoder
 * must reproduce the bytes.
 *
 * Share-group (KIP-932) and streams-group (KIP-1071) records of every type the jar's CoordinatorRecordType
 * lists, every value version, come from SchemaRecords (random instances driven by the generated classes'
 * SCHEMAS). This class needs the 4.1+ group coordinator (the marker on its first line: the `kafka` jar set);
 * SchemaRecords alone also runs against the 4.0 jars.
 *
 * Usage: RecordCodecOracle <records per type and version> <seed>
 */
public final class RecordCodecOracle {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;
    private final Random rnd;

    private RecordCodecOracle(long seed) {
        this.rnd = new Random(seed);
    }

    public static void main(String[] args) throws ReflectiveOperationException {
        int n = Integer.parseInt(args[0]);
        RecordCodecOracle o = new RecordCodecOracle(Long.parseLong(args[1]));
        SchemaRecords shareAndStreams = new SchemaRecords(o.rnd);
        List<SchemaRecords.RecordType> types = SchemaRecords.shareAndStreamsTypes();
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < n; i++) {
            for (short v = 0; v <= 4; v++) {
                o.emit(out, 1, v, o.offsetKey(), OffsetCommitKeyJsonConverter.write(o.lastOffsetKey, (short) 0),
                       o.offsetValue(v), OffsetCommitValueJsonConverter.write(o.lastOffsetValue, v));
                o.emit(out, 2, v, o.groupKey(), GroupMetadataKeyJsonConverter.write(o.lastGroupKey, (short) 0),
                       o.groupValue(v), GroupMetadataValueJsonConverter.write(o.lastGroupValue, v));
            }
            for (short v = 0; v <= 3; v++) {
                ConsumerProtocolSubscription s = o.subscription(v);
                o.emitProtocol(out, "subscription", v, MessageUtil.toVersionPrefixedBytes(v, s),
                               ConsumerProtocolSubscriptionJsonConverter.write(s, v));
                ConsumerProtocolAssignment a = o.assignment(v);
                o.emitProtocol(out, "assignment", v, MessageUtil.toVersionPrefixedBytes(v, a),
                               ConsumerProtocolAssignmentJsonConverter.write(a, v));
            }
            o.kip848(out);
            shareAndStreams.emitAll(out, types);
        }
        System.out.print(out);
    }

    // ------------------------------------------------------------------------------------------------

    private OffsetCommitKey lastOffsetKey;
    private OffsetCommitValue lastOffsetValue;
    private GroupMetadataKey lastGroupKey;
    private GroupMetadataValue lastGroupValue;

    private String str() {
        String[] pool = {"", "g", "orders.v2", "payments-consumer-7", "ünï-cødé", "tab\there", "\uD83D\uDE00 emoji"};
        return rnd.nextInt(3) == 0 ? pool[rnd.nextInt(pool.length)] : "s-" + Long.toHexString(rnd.nextLong());
    }

    private String nullableStr() {
        return rnd.nextInt(4) == 0 ? null : str();
    }

    private byte[] bytes() {
        byte[] b = new byte[rnd.nextInt(12)];
        rnd.nextBytes(b);
        return b;
    }

    private Uuid uuid() {
        return rnd.nextInt(4) == 0 ? Uuid.ZERO_UUID : new Uuid(rnd.nextLong(), rnd.nextLong());
    }

    private List<Integer> ints(int max) {
        List<Integer> l = new ArrayList<>();
        int n = rnd.nextInt(max + 1);
        for (int i = 0; i < n; i++) l.add(rnd.nextInt(1000));
        return l;
    }

    /** Partition lists of the ConsumerProtocol: never empty, as ConsumerProtocol.serialize* groups real
     *  (topic, partition) pairs by topic and so never writes a topic without partitions. */
    private List<Integer> someInts(int max) {
        List<Integer> l = ints(max - 1);
        l.add(rnd.nextInt(1000));
        return l;
    }

    private List<String> strs(int max) {
        List<String> l = new ArrayList<>();
        int n = rnd.nextInt(max + 1);
        for (int i = 0; i < n; i++) l.add(str());
        return l;
    }

    private byte[] offsetKey() {
        lastOffsetKey = new OffsetCommitKey().setGroup(str()).setTopic(str()).setPartition(rnd.nextInt(200));
        return MessageUtil.toCoordinatorTypePrefixedBytes(lastOffsetKey);
    }

    private byte[] offsetValue(short v) {
        OffsetCommitValue val = new OffsetCommitValue().setOffset(rnd.nextLong()).setMetadata(str())
            .setCommitTimestamp(rnd.nextLong());
        if (v >= 3) val.setLeaderEpoch(rnd.nextInt(3) == 0 ? -1 : rnd.nextInt(50));
        if (v == 1) val.setExpireTimestamp(rnd.nextLong());
        if (v >= 4) val.setTopicId(uuid());
        lastOffsetValue = val;
        return MessageUtil.toVersionPrefixedBytes(v, val);
    }

    private byte[] groupKey() {
        lastGroupKey = new GroupMetadataKey().setGroup(str());
        return MessageUtil.toCoordinatorTypePrefixedBytes(lastGroupKey);
    }

    private byte[] groupValue(short v) {
        boolean consumer = rnd.nextInt(4) != 0;
        GroupMetadataValue val = new GroupMetadataValue()
            .setProtocolType(consumer ? "consumer" : (rnd.nextBoolean() ? "connect" : ""))
            .setGeneration(rnd.nextInt(10000)).setProtocol(nullableStr()).setLeader(nullableStr());
        if (v >= 2) val.setCurrentStateTimestamp(rnd.nextLong());
        List<GroupMetadataValue.MemberMetadata> members = new ArrayList<>();
        int n = rnd.nextInt(4);
        for (int i = 0; i < n; i++) {
            GroupMetadataValue.MemberMetadata m = new GroupMetadataValue.MemberMetadata()
                .setMemberId(str()).setClientId(str()).setClientHost("/" + str())
                .setSessionTimeout(rnd.nextInt(60000));
            if (v >= 1) m.setRebalanceTimeout(rnd.nextInt(300000));
            if (v >= 3) m.setGroupInstanceId(nullableStr());
            short pv = (short) rnd.nextInt(4);
            m.setSubscription(consumer ? MessageUtil.toVersionPrefixedBytes(pv, subscription(pv)) : bytes());
            m.setAssignment(consumer ? MessageUtil.toVersionPrefixedBytes(pv, assignment(pv)) : bytes());
            members.add(m);
        }
        val.setMembers(members);
        lastGroupValue = val;
        return MessageUtil.toVersionPrefixedBytes(v, val);
    }

    private ConsumerProtocolSubscription subscription(short v) {
        ConsumerProtocolSubscription s = new ConsumerProtocolSubscription().setTopics(strs(3))
            .setUserData(rnd.nextBoolean() ? null : java.nio.ByteBuffer.wrap(bytes()));
        if (v >= 1) {
            ConsumerProtocolSubscription.TopicPartitionCollection owned = new ConsumerProtocolSubscription.TopicPartitionCollection();
            int n = rnd.nextInt(3);
            for (int i = 0; i < n; i++) owned.add(new ConsumerProtocolSubscription.TopicPartition().setTopic("t" + i).setPartitions(someInts(4)));
            s.setOwnedPartitions(owned);
        }
        if (v >= 2) s.setGenerationId(rnd.nextInt(100) - 1);
        if (v >= 3) s.setRackId(nullableStr());
        return s;
    }

    private ConsumerProtocolAssignment assignment(short v) {
        ConsumerProtocolAssignment.TopicPartitionCollection parts = new ConsumerProtocolAssignment.TopicPartitionCollection();
        int n = rnd.nextInt(3);
        for (int i = 0; i < n; i++) parts.add(new ConsumerProtocolAssignment.TopicPartition().setTopic("t" + i).setPartitions(someInts(4)));
        return new ConsumerProtocolAssignment().setAssignedPartitions(parts)
            .setUserData(rnd.nextBoolean() ? null : java.nio.ByteBuffer.wrap(bytes()));
    }

    private void kip848(StringBuilder out) {
        String g = str();
        String m = str();
        emit(out, 3, 0, MessageUtil.toCoordinatorTypePrefixedBytes(new ConsumerGroupMetadataKey().setGroupId(g)),
             ConsumerGroupMetadataKeyJsonConverter.write(new ConsumerGroupMetadataKey().setGroupId(g), (short) 0),
             value(new ConsumerGroupMetadataValue().setEpoch(rnd.nextInt()).setMetadataHash(rnd.nextBoolean() ? 0 : rnd.nextLong())),
             ConsumerGroupMetadataValueJsonConverter.write((ConsumerGroupMetadataValue) lastValue, (short) 0));

        List<ConsumerGroupPartitionMetadataValue.TopicMetadata> topics = new ArrayList<>();
        for (int i = 0; i < rnd.nextInt(3); i++) {
            List<ConsumerGroupPartitionMetadataValue.PartitionMetadata> pm = new ArrayList<>();
            for (int p = 0; p < rnd.nextInt(3); p++) pm.add(new ConsumerGroupPartitionMetadataValue.PartitionMetadata().setPartition(p).setRacks(strs(2)));
            topics.add(new ConsumerGroupPartitionMetadataValue.TopicMetadata().setTopicId(uuid()).setTopicName(str())
                .setNumPartitions(rnd.nextInt(100)).setPartitionMetadata(pm));
        }
        emit(out, 4, 0, MessageUtil.toCoordinatorTypePrefixedBytes(new ConsumerGroupPartitionMetadataKey().setGroupId(g)),
             ConsumerGroupPartitionMetadataKeyJsonConverter.write(new ConsumerGroupPartitionMetadataKey().setGroupId(g), (short) 0),
             value(new ConsumerGroupPartitionMetadataValue().setTopics(topics)),
             ConsumerGroupPartitionMetadataValueJsonConverter.write((ConsumerGroupPartitionMetadataValue) lastValue, (short) 0));

        ConsumerGroupMemberMetadataValue mm = new ConsumerGroupMemberMetadataValue().setInstanceId(nullableStr())
            .setRackId(nullableStr()).setClientId(str()).setClientHost(str()).setSubscribedTopicNames(strs(3))
            .setSubscribedTopicRegex(nullableStr()).setRebalanceTimeoutMs(rnd.nextInt(300000)).setServerAssignor(nullableStr());
        int classic = rnd.nextInt(3);
        if (classic == 0) {
            mm.setClassicMemberMetadata(null);  // what a broker writes for a consumer-protocol member
        } else if (classic == 1) {
            List<ConsumerGroupMemberMetadataValue.ClassicProtocol> protocols = new ArrayList<>();
            for (int i = 0; i < rnd.nextInt(3); i++) protocols.add(new ConsumerGroupMemberMetadataValue.ClassicProtocol().setName(str()).setMetadata(bytes()));
            mm.setClassicMemberMetadata(new ConsumerGroupMemberMetadataValue.ClassicMemberMetadata()
                .setSessionTimeoutMs(rnd.nextInt(60000)).setSupportedProtocols(protocols));
        }
        ConsumerGroupMemberMetadataKey mk = new ConsumerGroupMemberMetadataKey().setGroupId(g).setMemberId(m);
        emit(out, 5, 0, MessageUtil.toCoordinatorTypePrefixedBytes(mk), ConsumerGroupMemberMetadataKeyJsonConverter.write(mk, (short) 0),
             value(mm), ConsumerGroupMemberMetadataValueJsonConverter.write(mm, (short) 0));

        ConsumerGroupTargetAssignmentMetadataValue tam = new ConsumerGroupTargetAssignmentMetadataValue()
            .setAssignmentEpoch(rnd.nextInt(1000)).setAssignmentTimestamp(rnd.nextBoolean() ? 0 : rnd.nextLong());
        ConsumerGroupTargetAssignmentMetadataKey tamk = new ConsumerGroupTargetAssignmentMetadataKey().setGroupId(g);
        emit(out, 6, 0, MessageUtil.toCoordinatorTypePrefixedBytes(tamk), ConsumerGroupTargetAssignmentMetadataKeyJsonConverter.write(tamk, (short) 0),
             value(tam), ConsumerGroupTargetAssignmentMetadataValueJsonConverter.write(tam, (short) 0));

        List<ConsumerGroupTargetAssignmentMemberValue.TopicPartition> tps = new ArrayList<>();
        for (int i = 0; i < rnd.nextInt(3); i++) tps.add(new ConsumerGroupTargetAssignmentMemberValue.TopicPartition().setTopicId(uuid()).setPartitions(ints(5)));
        ConsumerGroupTargetAssignmentMemberValue tmv = new ConsumerGroupTargetAssignmentMemberValue().setTopicPartitions(tps);
        ConsumerGroupTargetAssignmentMemberKey tmk = new ConsumerGroupTargetAssignmentMemberKey().setGroupId(g).setMemberId(m);
        emit(out, 7, 0, MessageUtil.toCoordinatorTypePrefixedBytes(tmk), ConsumerGroupTargetAssignmentMemberKeyJsonConverter.write(tmk, (short) 0),
             value(tmv), ConsumerGroupTargetAssignmentMemberValueJsonConverter.write(tmv, (short) 0));

        ConsumerGroupCurrentMemberAssignmentValue cm = new ConsumerGroupCurrentMemberAssignmentValue()
            .setMemberEpoch(rnd.nextInt(1000)).setPreviousMemberEpoch(rnd.nextInt(1000)).setState((byte) rnd.nextInt(4))
            .setAssignedPartitions(currentPartitions()).setPartitionsPendingRevocation(currentPartitions());
        ConsumerGroupCurrentMemberAssignmentKey cmk = new ConsumerGroupCurrentMemberAssignmentKey().setGroupId(g).setMemberId(m);
        emit(out, 8, 0, MessageUtil.toCoordinatorTypePrefixedBytes(cmk), ConsumerGroupCurrentMemberAssignmentKeyJsonConverter.write(cmk, (short) 0),
             value(cm), ConsumerGroupCurrentMemberAssignmentValueJsonConverter.write(cm, (short) 0));

        ConsumerGroupRegularExpressionValue re = new ConsumerGroupRegularExpressionValue().setTopics(strs(3))
            .setVersion(rnd.nextLong()).setTimestamp(rnd.nextLong());
        ConsumerGroupRegularExpressionKey rek = new ConsumerGroupRegularExpressionKey().setGroupId(g).setRegularExpression(str());
        emit(out, 16, 0, MessageUtil.toCoordinatorTypePrefixedBytes(rek), ConsumerGroupRegularExpressionKeyJsonConverter.write(rek, (short) 0),
             value(re), ConsumerGroupRegularExpressionValueJsonConverter.write(re, (short) 0));
    }

    private List<ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions> currentPartitions() {
        List<ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions> l = new ArrayList<>();
        for (int i = 0; i < rnd.nextInt(3); i++) {
            ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions tp = new ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions()
                .setTopicId(uuid()).setPartitions(ints(4));
            int epochs = rnd.nextInt(3);
            if (epochs == 1) tp.setAssignmentEpochs(ints(4));
            if (epochs == 2) tp.setAssignmentEpochs(null);
            l.add(tp);
        }
        return l;
    }

    private ApiMessage lastValue;

    private byte[] value(ApiMessage msg) {
        lastValue = msg;
        return MessageUtil.toVersionPrefixedBytes((short) 0, msg);
    }

    private static String hex(byte[] b) {
        StringBuilder s = new StringBuilder(b.length * 2);
        for (byte x : b) s.append(String.format("%02x", x));
        return s.toString();
    }

    private void emit(StringBuilder out, int type, int version, byte[] key, JsonNode keyJson, byte[] value, JsonNode valueJson) {
        ObjectNode o = F.objectNode();
        o.put("type", type).put("version", version).put("key", hex(key)).put("value", hex(value));
        o.set("keyJson", keyJson);
        o.set("valueJson", valueJson);
        out.append(o).append('\n');
    }

    private void emitProtocol(StringBuilder out, String kind, int version, byte[] bytes, JsonNode json) {
        ObjectNode o = F.objectNode();
        o.put("protocol", kind).put("version", version).put("value", hex(bytes));
        o.set("valueJson", json);
        out.append(o).append('\n');
    }
}
