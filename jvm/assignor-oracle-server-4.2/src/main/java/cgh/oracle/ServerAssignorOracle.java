package cgh.oracle;

import java.util.Collections;
import java.util.Map;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.coordinator.common.runtime.KRaftCoordinatorMetadataImage;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupTargetAssignmentMemberValue;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.TargetAssignmentBuilder;
import org.apache.kafka.coordinator.group.modern.consumer.ConsumerGroup;
import org.apache.kafka.coordinator.group.modern.consumer.ConsumerGroupMember;
import org.apache.kafka.timeline.SnapshotRegistry;

/**
 * The 4.2.x-4.3.x version of jvm/assignor-oracle's ServerAssignorOracle (LogContext still in
 * {@code common.utils}; {@code withTime}, needed by 4.3's builder, absent from 4.2's, so called by reflection).
 *
 * <p>Runs Kafka's KIP-848 server-side assignors (kafka-group-coordinator 4.2-4.3: {@code uniform}, {@code range}) the
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
        KRaftCoordinatorMetadataImage image = new KRaftCoordinatorMetadataImage(ServerGroups.image(c.topics()));

        LogContext logContext = new LogContext();
        ConsumerGroup group = new ConsumerGroup(logContext, new SnapshotRegistry(logContext), "group");
        Map<String, ConsumerGroupMember> members = ServerGroups.addMembers(group, c.members());

        TargetAssignmentBuilder.ConsumerTargetAssignmentBuilder builder =
                new TargetAssignmentBuilder.ConsumerTargetAssignmentBuilder("group", 1, assignor);
        try {
            builder.getClass().getMethod("withTime", Time.class).invoke(builder, Time.SYSTEM);
        } catch (NoSuchMethodException e) {
            // 4.2: the builder has no clock
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
        TargetAssignmentBuilder.TargetAssignmentResult result =
                builder
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
