// oracle jar set requires: kafka-group-coordinator-4 kafka-metadata-4
package cgh.oracle;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.metadata.PartitionRecord;
import org.apache.kafka.common.metadata.TopicRecord;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupTargetAssignmentMemberValue;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.TargetAssignmentBuilder;
import org.apache.kafka.coordinator.group.modern.consumer.ConsumerGroup;
import org.apache.kafka.coordinator.group.modern.consumer.ConsumerGroupMember;
import org.apache.kafka.image.MetadataDelta;
import org.apache.kafka.image.MetadataImage;
import org.apache.kafka.image.MetadataProvenance;

/**
 * The parts of the server assignor harnesses that call Kafka classes whose API is the same in every
 * kafka-group-coordinator 4.x (symlinked into each jvm/assignor-oracle-server-4.x tree; compiled only with
 * jar sets that hold those jars). What differs between versions (how a ConsumerGroup is made, what the
 * TargetAssignmentBuilder takes) stays in each ServerAssignorOracle.
 */
final class ServerGroups {

    private ServerGroups() {
    }

    /** A KRaft metadata image holding the case's topics (one replica, leader 1, on every partition). */
    static MetadataImage image(List<ServerCases.Topic> topics) {
        MetadataDelta delta = new MetadataDelta.Builder().setImage(MetadataImage.EMPTY).build();
        for (ServerCases.Topic t : topics) {
            Uuid topicId = Uuid.fromString(t.id());
            delta.replay(new TopicRecord().setName(t.name()).setTopicId(topicId));
            for (int p = 0; p < t.partitions(); p++) {
                delta.replay(new PartitionRecord().setTopicId(topicId).setPartitionId(p)
                        .setReplicas(List.of(1)).setIsr(List.of(1)).setLeader(1).setLeaderEpoch(0)
                        .setPartitionEpoch(0));
            }
        }
        return delta.apply(MetadataProvenance.EMPTY);
    }

    /**
     * Adds the case's members to the group, each with its previous target assignment, in the case's order;
     * returns them by member id in that order (the insertion order of the coordinator's member spec).
     */
    static Map<String, ConsumerGroupMember> addMembers(ConsumerGroup group, List<ServerCases.Member> caseMembers) {
        Map<String, ConsumerGroupMember> members = new LinkedHashMap<>();
        for (ServerCases.Member m : caseMembers) {
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
        return members;
    }

    /** The case's result: the group's subscription type and each member's new target assignment. */
    static ServerCases.Result result(ConsumerGroup group, TargetAssignmentBuilder.TargetAssignmentResult result) {
        return new ServerCases.Result(group.subscriptionType().name(), memberId -> {
            MemberAssignment assignment = result.targetAssignment().get(memberId);
            return assignment == null ? null : assignment.partitions();
        });
    }

    /** Kafka's server assignor of that name. */
    static ConsumerGroupPartitionAssignor newAssignor(String name) {
        switch (name) {
            case "uniform": return new UniformAssignor();
            case "range": return new RangeAssignor();
            default: throw new IllegalArgumentException("unknown server assignor " + name);
        }
    }
}
