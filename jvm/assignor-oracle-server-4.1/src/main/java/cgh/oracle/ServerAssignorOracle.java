package cgh.oracle;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.metadata.PartitionRecord;
import org.apache.kafka.common.metadata.TopicRecord;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupTargetAssignmentMemberValue;
import org.apache.kafka.coordinator.group.metrics.GroupCoordinatorMetricsShard;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.TargetAssignmentBuilder;
import org.apache.kafka.coordinator.group.modern.consumer.ConsumerGroup;
import org.apache.kafka.coordinator.group.modern.consumer.ConsumerGroupMember;
import org.apache.kafka.image.MetadataDelta;
import org.apache.kafka.image.MetadataImage;
import org.apache.kafka.image.MetadataProvenance;
import org.apache.kafka.timeline.SnapshotRegistry;

/**
 * The 4.1.x version of jvm/assignor-oracle's ServerAssignorOracle (the builder takes the KRaft
 * MetadataImage itself; ConsumerGroup takes no LogContext but a metrics shard).
 *
 * <p>Runs Kafka's KIP-848 server-side assignors (kafka-group-coordinator 4.1: {@code uniform}, {@code range}) the
 * way the group coordinator does, on cases read as JSON lines from stdin; one result line per case on stdout.
 *
 * <p>Per case: a KRaft metadata image with the topics (TopicRecord + PartitionRecords), a fresh ConsumerGroup
 * holding the members (ConsumerGroupMember built from the subscribed topic names, so the group computes its
 * subscription type) and their previous target assignments ({@code Assignment.fromRecord} of a
 * ConsumerGroupTargetAssignmentMemberValue, which also fills the group's inverted target assignment), then
 * Kafka's own {@code TargetAssignmentBuilder} with the members in the case's order (the insertion order of
 * the coordinator's member spec HashMap).
 *
 * Case: {"id", "assignor": "uniform"|"range", "topics": {name: {"id": uuid, "partitions": n}},
 *        "members": [{"id", "topics": [names], "instance"|null, "rack"|null,
 *                     "assignment": [[topic id, [partitions]]]}]}
 * Result: {"id", "subscription_type", "assignment": {member: [[topic id, [partitions]]]}} with each member's
 * topics and partitions in the iteration order of Kafka's result maps and sets (a member the assignor left out
 * gets []), or {"id", "error": "ExceptionClass: message"}.
 */
public final class ServerAssignorOracle {

    public static void main(String[] args) throws Exception {
        Cases.serve(ServerAssignorOracle::run);
    }

    @SuppressWarnings("unchecked")
    static void run(Map<String, Object> c, StringBuilder b) {
        ConsumerGroupPartitionAssignor assignor = newAssignor((String) c.get("assignor"));

        MetadataDelta delta = new MetadataDelta.Builder().setImage(MetadataImage.EMPTY).build();
        for (Map.Entry<String, Object> t : ((Map<String, Object>) c.get("topics")).entrySet()) {
            Map<String, Object> meta = (Map<String, Object>) t.getValue();
            Uuid topicId = Uuid.fromString((String) meta.get("id"));
            delta.replay(new TopicRecord().setName(t.getKey()).setTopicId(topicId));
            int partitions = ((Long) meta.get("partitions")).intValue();
            for (int p = 0; p < partitions; p++) {
                delta.replay(new PartitionRecord().setTopicId(topicId).setPartitionId(p)
                        .setReplicas(List.of(1)).setIsr(List.of(1)).setLeader(1).setLeaderEpoch(0)
                        .setPartitionEpoch(0));
            }
        }
        MetadataImage image = delta.apply(MetadataProvenance.EMPTY);

        LogContext logContext = new LogContext();
        SnapshotRegistry snapshotRegistry = new SnapshotRegistry(logContext);
        ConsumerGroup group = new ConsumerGroup(snapshotRegistry, "group",
                new GroupCoordinatorMetricsShard(snapshotRegistry, Map.of(), new TopicPartition("__consumer_offsets", 0)));
        Map<String, ConsumerGroupMember> members = new LinkedHashMap<>();
        for (Object o : (List<Object>) c.get("members")) {
            Map<String, Object> m = (Map<String, Object>) o;
            String memberId = (String) m.get("id");
            ConsumerGroupMember member = new ConsumerGroupMember.Builder(memberId)
                    .setSubscribedTopicNames(Cases.topics(m))
                    .setInstanceId((String) m.get("instance"))
                    .setRackId((String) m.get("rack"))
                    .build();
            members.put(memberId, member);
            group.updateMember(member);

            List<ConsumerGroupTargetAssignmentMemberValue.TopicPartition> record = new ArrayList<>();
            for (Object tp : (List<Object>) m.get("assignment")) {
                List<Object> pair = (List<Object>) tp;
                List<Integer> partitions = new ArrayList<>();
                for (Object p : (List<Object>) pair.get(1)) partitions.add(((Long) p).intValue());
                record.add(new ConsumerGroupTargetAssignmentMemberValue.TopicPartition()
                        .setTopicId(Uuid.fromString((String) pair.get(0))).setPartitions(partitions));
            }
            group.updateTargetAssignment(memberId,
                    Assignment.fromRecord(new ConsumerGroupTargetAssignmentMemberValue().setTopicPartitions(record)));
        }

        TargetAssignmentBuilder.TargetAssignmentResult result =
                new TargetAssignmentBuilder.ConsumerTargetAssignmentBuilder("group", 1, assignor)
                        .withMembers(members)
                        .withSubscriptionType(group.subscriptionType())
                        .withTargetAssignment(group.targetAssignment())
                        .withInvertedTargetAssignment(group.invertedTargetAssignment())
                        .withMetadataImage(image)
                        .withResolvedRegularExpressions(Collections.emptyMap())
                        .build();

        b.append(",\"subscription_type\":");
        Json.quote(b, group.subscriptionType().name());
        b.append(",\"assignment\":{");
        boolean firstMember = true;
        for (String memberId : members.keySet()) {
            if (!firstMember) b.append(',');
            firstMember = false;
            Json.quote(b, memberId);
            b.append(":[");
            MemberAssignment assignment = result.targetAssignment().get(memberId);
            if (assignment != null) {
                boolean firstTopic = true;
                for (Map.Entry<Uuid, Set<Integer>> e : assignment.partitions().entrySet()) {
                    if (!firstTopic) b.append(',');
                    firstTopic = false;
                    b.append('[');
                    Json.quote(b, e.getKey().toString());
                    b.append(",[");
                    boolean firstPartition = true;
                    for (Integer p : e.getValue()) {
                        if (!firstPartition) b.append(',');
                        firstPartition = false;
                        b.append(p);
                    }
                    b.append("]]");
                }
            }
            b.append(']');
        }
        b.append('}');
    }

    static ConsumerGroupPartitionAssignor newAssignor(String name) {
        switch (name) {
            case "uniform": return new UniformAssignor();
            case "range": return new RangeAssignor();
            default: throw new IllegalArgumentException("unknown server assignor " + name);
        }
    }
}
