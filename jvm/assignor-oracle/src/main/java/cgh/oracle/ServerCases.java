package cgh.oracle;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * What the KIP-848 server assignor harnesses (jvm/assignor-oracle for kafka-group-coordinator 4.4+ and the
 * jvm/assignor-oracle-server-4.x trees, which share this file by a symlink) do alike, without Kafka's
 * classes: reading a case into plain values, and writing the result line.
 *
 * Case: {"id", "assignor": "uniform"|"range", "topics": {name: {"id": uuid, "partitions": n}},
 *        "members": [{"id", "topics": [names], "instance"|null, "rack"|null,
 *                     "assignment": [[topic id, [partitions]]]}]}
 * Result: {"id", "subscription_type", "assignment": {member: [[topic id, [partitions]]]}} with each member's
 * topics and partitions in the iteration order of Kafka's result maps and sets (a member the assignor left out
 * gets []), or {"id", "error": "ExceptionClass: message"}.
 */
final class ServerCases {

    private ServerCases() {}

    /** A topic of the case: its name, its topic id (as Kafka's Uuid prints) and partition count. */
    record Topic(String name, String id, int partitions) {}

    /** A topic id and partitions of a member's previous target assignment. */
    record TopicPartitions(String topicId, List<Integer> partitions) {}

    /** A member of the case, in the case's order. */
    record Member(String id, List<String> topics, String instance, String rack, List<TopicPartitions> assignment) {}

    /** A case's topics (in the JSON object's order) and members. */
    record Case(List<Topic> topics, List<Member> members) {}

    /**
     * What the assignor did: the group's subscription type name, and for a member id the topic ids (printed
     * by toString) and partitions the assignor gave it, in Kafka's iteration order, or null if it left the
     * member out.
     */
    record Result(String subscriptionType, Function<String, Map<?, ? extends Collection<Integer>>> assignment) {}

    /** Runs the version's assignor (made by the harness from the case's "assignor") on a case. */
    interface Run<A> {
        Result run(A assignor, Case c) throws Exception;
    }

    /**
     * Serves cases from stdin ({@link Cases#serve}): makes the assignor first (an unknown name is the case's
     * error), then reads the case and runs it.
     */
    static <A> void serve(Function<String, A> newAssignor, Run<A> run) throws Exception {
        Cases.serve((c, b) -> {
            A assignor = newAssignor.apply((String) c.get("assignor"));
            Case parsed = read(c);
            write(b, parsed, run.run(assignor, parsed));
        });
    }

    @SuppressWarnings("unchecked")
    static Case read(Map<String, Object> c) {
        List<Topic> topics = new ArrayList<>();
        for (Map.Entry<String, Object> t : ((Map<String, Object>) c.get("topics")).entrySet()) {
            Map<String, Object> meta = (Map<String, Object>) t.getValue();
            topics.add(new Topic(t.getKey(), (String) meta.get("id"), ((Long) meta.get("partitions")).intValue()));
        }
        List<Member> members = new ArrayList<>();
        for (Object o : (List<Object>) c.get("members")) {
            Map<String, Object> m = (Map<String, Object>) o;
            List<TopicPartitions> assignment = new ArrayList<>();
            for (Object tp : (List<Object>) m.get("assignment")) {
                List<Object> pair = (List<Object>) tp;
                List<Integer> partitions = new ArrayList<>();
                for (Object p : (List<Object>) pair.get(1)) partitions.add(((Long) p).intValue());
                assignment.add(new TopicPartitions((String) pair.get(0), partitions));
            }
            members.add(new Member((String) m.get("id"), Cases.topics(m), (String) m.get("instance"),
                    (String) m.get("rack"), assignment));
        }
        return new Case(topics, members);
    }

    /** Appends the result's subscription type and each member's assignment (members in first-seen order). */
    static void write(StringBuilder b, Case c, Result result) {
        b.append(",\"subscription_type\":");
        Json.quote(b, result.subscriptionType());
        b.append(",\"assignment\":{");
        Set<String> memberIds = new LinkedHashSet<>();
        for (Member m : c.members()) memberIds.add(m.id());
        boolean firstMember = true;
        for (String memberId : memberIds) {
            if (!firstMember) b.append(',');
            firstMember = false;
            Json.quote(b, memberId);
            b.append(":[");
            Map<?, ? extends Collection<Integer>> assignment = result.assignment().apply(memberId);
            if (assignment != null) {
                boolean firstTopic = true;
                for (Map.Entry<?, ? extends Collection<Integer>> e : assignment.entrySet()) {
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
}
