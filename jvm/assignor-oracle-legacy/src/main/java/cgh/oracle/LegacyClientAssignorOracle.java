package cgh.oracle;

import java.lang.reflect.Constructor;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.internals.PartitionAssignor;
import org.apache.kafka.clients.consumer.internals.PartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.internals.PartitionAssignor.Subscription;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

/**
 * ClientAssignorOracle for kafka-clients 0.9.0-2.3.x, whose assignors implement the old
 * {@code internals.PartitionAssignor} ({@code assign(Cluster, Map<String, Subscription>)}, a Subscription of
 * topics and user data only: no owned partitions, generation, group instance id or rack). Same JSON lines in
 * and out as ClientAssignorOracle; the fields those versions lack are ignored. Assignors are loaded by class
 * name (StickyAssignor exists from 0.11.0) and the Cluster constructor is picked by reflection (0.9.0 has
 * no cluster id).
 */
public final class LegacyClientAssignorOracle {

    public static void main(String[] args) throws Exception {
        Cases.serve((c, b) -> Cases.appendAssignment(b, run(c), TopicPartition::topic, TopicPartition::partition));
    }

    @SuppressWarnings("unchecked")
    static Map<String, List<TopicPartition>> run(Map<String, Object> c) throws Exception {
        PartitionAssignor assignor = newAssignor((String) c.get("assignor"));
        Map<Integer, Node> nodes = new HashMap<>();
        for (Object o : (List<Object>) c.get("brokers")) {
            int id = ((Long) ((List<Object>) o).get(0)).intValue();
            nodes.put(id, new Node(id, "broker" + id, 9092));
        }
        List<PartitionInfo> partitions = new ArrayList<>();
        for (Map.Entry<String, Object> t : ((Map<String, Object>) c.get("topics")).entrySet()) {
            int count = ((Long) t.getValue()).intValue();
            for (int p = 0; p < count; p++)
                partitions.add(new PartitionInfo(t.getKey(), p, null, new Node[0], new Node[0]));
        }
        Cluster cluster = newCluster(new ArrayList<>(nodes.values()), partitions);
        Map<String, Subscription> subscriptions = new HashMap<>();
        for (Object o : (List<Object>) c.get("members")) {
            Map<String, Object> m = (Map<String, Object>) o;
            subscriptions.put((String) m.get("id"), new Subscription(Cases.topics(m), Cases.userData(m)));
        }
        Map<String, List<TopicPartition>> result = new LinkedHashMap<>();  // in the assignor's map order
        for (Map.Entry<String, Assignment> e : assignor.assign(cluster, subscriptions).entrySet())
            result.put(e.getKey(), e.getValue().partitions());
        return result;
    }

    static PartitionAssignor newAssignor(String name) throws Exception {
        String cls;
        switch (name) {
            case "range": cls = "RangeAssignor"; break;
            case "roundrobin": cls = "RoundRobinAssignor"; break;
            case "sticky": cls = "StickyAssignor"; break;
            default: throw new IllegalArgumentException("unknown assignor " + name);
        }
        return (PartitionAssignor) Class.forName("org.apache.kafka.clients.consumer." + cls)
                .getConstructor().newInstance();
    }

    static Cluster newCluster(List<Node> nodes, List<PartitionInfo> partitions) throws Exception {
        Set<String> none = Collections.emptySet();
        for (Constructor<?> k : Cluster.class.getConstructors()) {
            Class<?>[] ps = k.getParameterTypes();
            if (ps.length == 3 && ps[0] == Collection.class && ps[1] == Collection.class && ps[2] == Set.class)
                return (Cluster) k.newInstance(nodes, partitions, none);
        }
        for (Constructor<?> k : Cluster.class.getConstructors()) {
            Class<?>[] ps = k.getParameterTypes();
            if (ps.length == 5 && ps[0] == String.class && ps[4] == Set.class)
                return (Cluster) k.newInstance("cluster", nodes, partitions, none, none);
        }
        throw new IllegalStateException("no known Cluster constructor");
    }
}
