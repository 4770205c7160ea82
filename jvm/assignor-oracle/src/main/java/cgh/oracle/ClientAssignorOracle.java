package cgh.oracle;

import java.lang.reflect.Constructor;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupAssignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

/**
 * Runs Kafka's own client-side assignors on cases read as JSON lines from stdin, one result line per case on
 * stdout. Mirrors what the group leader does: a fresh assignor instance, the members put into a new HashMap
 * in JoinGroup order, and {@code assign(Cluster, GroupSubscription)} with the replicas' racks in the Cluster.
 * Compiles against kafka-clients 3.0 and later (the Subscription constructor is picked by reflection).
 *
 * Case: {"id", "assignor", "topics": {name: count}, "brokers": [[id, rack|null]],
 *        "replicas": {name: [[broker ids of partition 0], ...]}, "members": [{"id", "topics", "user_data"
 *        (base64|null), "owned": [[topic, p]], "generation" (int|null), "instance", "rack"}]}
 * Result: {"id", "assignment": {member: [[topic, p]]}} or {"id", "error": "ExceptionClass: message"}.
 */
public final class ClientAssignorOracle {

    public static void main(String[] args) throws Exception {
        Cases.serve((c, b) -> Cases.appendAssignment(b, run(c), TopicPartition::topic, TopicPartition::partition));
    }

    @SuppressWarnings("unchecked")
    static Map<String, List<TopicPartition>> run(Map<String, Object> c) throws Exception {
        ConsumerPartitionAssignor assignor = newAssignor((String) c.get("assignor"));
        Map<Integer, Node> nodes = new HashMap<>();
        for (Object o : (List<Object>) c.get("brokers")) {
            List<Object> br = (List<Object>) o;
            int id = ((Long) br.get(0)).intValue();
            nodes.put(id, new Node(id, "broker" + id, 9092, (String) br.get(1)));
        }
        Map<String, Object> replicas = (Map<String, Object>) c.get("replicas");
        List<PartitionInfo> partitions = new ArrayList<>();
        for (Map.Entry<String, Object> t : ((Map<String, Object>) c.get("topics")).entrySet()) {
            int count = ((Long) t.getValue()).intValue();
            List<Object> reps = replicas == null ? null : (List<Object>) replicas.get(t.getKey());
            for (int p = 0; p < count; p++) {
                Node[] rs = new Node[0];
                if (reps != null) {
                    List<Object> ids = (List<Object>) reps.get(p);
                    rs = new Node[ids.size()];
                    for (int k = 0; k < rs.length; k++) rs[k] = nodes.get(((Long) ids.get(k)).intValue());
                }
                partitions.add(new PartitionInfo(t.getKey(), p, rs.length > 0 ? rs[0] : null, rs, rs));
            }
        }
        Cluster cluster = new Cluster("cluster", new ArrayList<>(nodes.values()), partitions,
                Collections.emptySet(), Collections.emptySet());
        Map<String, Subscription> subscriptions = new HashMap<>();
        for (Object o : (List<Object>) c.get("members")) {
            Map<String, Object> m = (Map<String, Object>) o;
            List<String> topics = Cases.topics(m);
            ByteBuffer userData = Cases.userData(m);
            List<TopicPartition> owned = new ArrayList<>();
            for (Object tp : (List<Object>) m.get("owned")) {
                List<Object> pair = (List<Object>) tp;
                owned.add(new TopicPartition((String) pair.get(0), ((Long) pair.get(1)).intValue()));
            }
            Long generation = (Long) m.get("generation");
            Subscription s = newSubscription(topics, userData, owned,
                    generation == null ? -1 : generation.intValue(), (String) m.get("rack"));
            s.setGroupInstanceId(Optional.ofNullable((String) m.get("instance")));
            subscriptions.put((String) m.get("id"), s);
        }
        GroupAssignment ga = assignor.assign(cluster, new GroupSubscription(subscriptions));
        Map<String, List<TopicPartition>> result = new HashMap<>();
        for (Map.Entry<String, ConsumerPartitionAssignor.Assignment> e : ga.groupAssignment().entrySet())
            result.put(e.getKey(), e.getValue().partitions());
        return result;
    }

    static ConsumerPartitionAssignor newAssignor(String name) {
        switch (name) {
            case "range": return new RangeAssignor();
            case "roundrobin": return new RoundRobinAssignor();
            case "sticky": return new StickyAssignor();
            case "cooperative-sticky": return new CooperativeStickyAssignor();
            default: throw new IllegalArgumentException("unknown assignor " + name);
        }
    }

    static Subscription newSubscription(List<String> topics, ByteBuffer userData, List<TopicPartition> owned,
                                        int generation, String rack) throws Exception {
        for (Constructor<?> k : Subscription.class.getConstructors()) {
            Class<?>[] ps = k.getParameterTypes();
            if (ps.length == 5 && ps[3] == int.class && ps[4] == Optional.class)
                return (Subscription) k.newInstance(topics, userData, owned, generation, Optional.ofNullable(rack));
        }
        for (Constructor<?> k : Subscription.class.getConstructors()) {
            Class<?>[] ps = k.getParameterTypes();
            if (ps.length == 4 && ps[3] == int.class)
                return (Subscription) k.newInstance(topics, userData, owned, generation);
        }
        return new Subscription(topics, userData, owned);
    }
}
