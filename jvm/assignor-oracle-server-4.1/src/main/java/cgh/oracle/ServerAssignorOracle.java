package cgh.oracle;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
 * <p>Cases and results as in {@link ServerCases}.
 */
public final class ServerAssignorOracle {

    public static void main(String[] args) throws Exception {
        ServerCases.serve(ServerAssignorOracle::newAssignor, ServerAssignorOracle::run);
    }

    static ServerCases.Result run(ConsumerGroupPartitionAssignor assignor, ServerCases.Case c) {
        MetadataDelta delta = new MetadataDelta.Builder().setImage(MetadataImage.EMPTY).build();
        for (ServerCases.Topic t : c.topics()) {
            Uuid topicId = Uuid.fromString(t.id());
            delta.replay(new TopicRecord().setName(t.name()).setTopicId(topicId));
            for (int p = 0; p < t.partitions(); p++) {
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
        for (ServerCases.Member m : c.members()) {
            ConsumerGroupMember member = new ConsumerGroupMember.Builder(m.id())
                    .setSubscribedTopicNames(m.topics())
                    .setInstanceId(m.instance())
                    .setRackId(m.rack())
                    .build();
            members.put(m.id(), member);
            group.updateMember(member);

            List<ConsumerGroupTargetAssignmentMemberValue.TopicPartition> record = new ArrayList<>();
            for (ServerCases.TopicPartitions tp : m.assignment()) {
                record.add(new ConsumerGroupTargetAssignmentMemberValue.TopicPartition()
                        .setTopicId(Uuid.fromString(tp.topicId())).setPartitions(tp.partitions()));
            }
            group.updateTargetAssignment(m.id(),
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

        return new ServerCases.Result(group.subscriptionType().name(), memberId -> {
            MemberAssignment assignment = result.targetAssignment().get(memberId);
            return assignment == null ? null : assignment.partitions();
        });
    }

    static ConsumerGroupPartitionAssignor newAssignor(String name) {
        switch (name) {
            case "uniform": return new UniformAssignor();
            case "range": return new RangeAssignor();
            default: throw new IllegalArgumentException("unknown server assignor " + name);
        }
    }
}
