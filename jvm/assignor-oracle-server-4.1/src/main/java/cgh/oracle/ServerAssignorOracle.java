package cgh.oracle;

import java.util.Collections;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupTargetAssignmentMemberValue;
import org.apache.kafka.coordinator.group.metrics.GroupCoordinatorMetricsShard;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.TargetAssignmentBuilder;
import org.apache.kafka.coordinator.group.modern.consumer.ConsumerGroup;
import org.apache.kafka.coordinator.group.modern.consumer.ConsumerGroupMember;
import org.apache.kafka.image.MetadataImage;
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
        ServerCases.serve(ServerGroups::newAssignor, ServerAssignorOracle::run);
    }

    static ServerCases.Result run(ConsumerGroupPartitionAssignor assignor, ServerCases.Case c) {
        MetadataImage image = ServerGroups.image(c.topics());

        LogContext logContext = new LogContext();
        SnapshotRegistry snapshotRegistry = new SnapshotRegistry(logContext);
        ConsumerGroup group = new ConsumerGroup(snapshotRegistry, "group",
                new GroupCoordinatorMetricsShard(snapshotRegistry, Map.of(), new TopicPartition("__consumer_offsets", 0)));
        Map<String, ConsumerGroupMember> members = ServerGroups.addMembers(group, c.members());

        TargetAssignmentBuilder.TargetAssignmentResult result =
                new TargetAssignmentBuilder.ConsumerTargetAssignmentBuilder("group", 1, assignor)
                        .withMembers(members)
                        .withSubscriptionType(group.subscriptionType())
                        .withTargetAssignment(group.targetAssignment())
                        .withInvertedTargetAssignment(group.invertedTargetAssignment())
                        .withMetadataImage(image)
                        .withResolvedRegularExpressions(Collections.emptyMap())
                        .build();

        return ServerGroups.result(group, result);
    }
}
