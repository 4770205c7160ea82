package cgh.testbed;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * One member of a consumer group for the rebalance-cost test bed: Kafka's own KafkaConsumer (the classic
 * protocol with an eager or cooperative assignor, or the KIP-848 consumer protocol), reporting what the
 * client itself measures, so that a test can hold the cost table against the client's own word.
 *
 * <p>Kafka's clients measure each rebalance in the `consumer-coordinator-metrics` group: `rebalance-total`
 * counts them and `rebalance-latency-total` sums their durations (classic: from the JoinGroup request, sent
 * after the eager revocation, to the successful SyncGroup; consumer protocol: the member's time in the
 * RECONCILING state). The difference of the sum between two readings one rebalance apart is that
 * rebalance's latency, which `rebalance-latency-max` only gives as a windowed maximum.
 *
 * <p>Prints one JSON object per line on stdout, `at` in epoch milliseconds on this machine's clock:
 * <ul>
 * <li>`{"event":"revoked"|"lost"|"assigned","at":..,"member_id":..,"generation":..,"partitions":["t-0"],
 *     "metrics":{..}}` from the rebalance listener, as the callback starts (the classic protocol records
 *     a rebalance's latency before it calls `onPartitionsAssigned`);</li>
 * <li>`{"event":"rebalance","at":..,"since":..,"member_id":..,"generation":..,"metrics":{..}}` after a
 *     poll when `rebalance-total` grew since the previous check at `since` (the consumer protocol records
 *     the end of a rebalance after its callbacks, in the background thread);</li>
 * <li>`{"event":"closed","at":..}` once the consumer is closed.</li>
 * </ul>
 * A line `close` on stdin (or its end) closes the consumer: a dynamic member leaves the group, a static
 * member (with a group.instance.id) stays until its session times out (KIP-345).
 *
 * <p>Usage: RebalanceMember &lt;bootstrap&gt; &lt;group&gt; &lt;client id&gt; &lt;topic&gt;
 * &lt;classic|consumer&gt; &lt;range|cooperative-sticky|-&gt; &lt;group.instance.id|-&gt;
 */
public final class RebalanceMember {
    private static final String METRIC_GROUP = "consumer-coordinator-metrics";
    private static final String[] METRICS = {"rebalance-total", "rebalance-latency-total", "rebalance-latency-max",
        "rebalance-latency-avg", "last-rebalance-seconds-ago", "failed-rebalance-total"};

    private final KafkaConsumer<byte[], byte[]> consumer;

    private RebalanceMember(KafkaConsumer<byte[], byte[]> consumer) {
        this.consumer = consumer;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 7) {
            System.err.println("usage: RebalanceMember <bootstrap> <group> <client id> <topic> <classic|consumer> "
                + "<assignor|-> <group.instance.id|->");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, args[1]);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, args[2]);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, args[4]);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "true");
        props.put(ConsumerConfig.AUTO_COMMIT_INTERVAL_MS_CONFIG, "1000");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        if (args[4].equals("classic")) {
            // The consumer protocol takes its timeouts and assignor from the broker; the classic one from here.
            props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
            props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "1000");
            props.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, "30000");
            String assignor = args[5].equals("cooperative-sticky")
                ? "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
                : "org.apache.kafka.clients.consumer.RangeAssignor";
            props.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignor);
        }
        if (!args[6].equals("-")) {
            props.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, args[6]);
        }
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props);
        new RebalanceMember(consumer).run(args[3]);
    }

    private void run(String topic) {
        AtomicBoolean closing = new AtomicBoolean(false);
        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null && !line.trim().equals("close")) {
                    // other lines are ignored
                }
            } catch (Exception ignored) {
                // a broken stdin closes the member as its end does
            }
            closing.set(true);
            consumer.wakeup();
        }, "stdin");
        stdin.setDaemon(true);
        stdin.start();

        consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                callback("revoked", partitions);
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                callback("assigned", partitions);
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> partitions) {
                callback("lost", partitions);
            }
        });
        double seen = 0;
        long checked = System.currentTimeMillis();
        try {
            while (!closing.get()) {
                consumer.poll(Duration.ofMillis(50));
                long now = System.currentTimeMillis();
                Map<String, Object> metrics = metrics();
                Object total = metrics.get("rebalance-total");
                if (total instanceof Double && (Double) total > seen) {
                    seen = (Double) total;
                    emit("{\"event\":\"rebalance\",\"at\":" + now + ",\"since\":" + checked + identity()
                        + ",\"metrics\":" + json(metrics) + "}");
                }
                checked = now;
            }
        } catch (WakeupException expected) {
            // closing
        }
        consumer.close();
        emit("{\"event\":\"closed\",\"at\":" + System.currentTimeMillis() + "}");
    }

    private void callback(String event, Collection<TopicPartition> partitions) {
        long at = System.currentTimeMillis();
        List<String> names = new ArrayList<>();
        for (TopicPartition tp : partitions) {
            names.add(quote(tp.toString()));
        }
        emit("{\"event\":\"" + event + "\",\"at\":" + at + identity() + ",\"partitions\":" + names
            + ",\"metrics\":" + json(metrics()) + "}");
    }

    private String identity() {
        ConsumerGroupMetadata meta = consumer.groupMetadata();
        return ",\"member_id\":" + quote(meta.memberId()) + ",\"generation\":" + meta.generationId();
    }

    private Map<String, Object> metrics() {
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<MetricName, ? extends Metric> e : consumer.metrics().entrySet()) {
            MetricName name = e.getKey();
            if (name.group().equals(METRIC_GROUP) && List.of(METRICS).contains(name.name())) {
                out.put(name.name(), e.getValue().metricValue());
            }
        }
        return out;
    }

    private static String json(Map<String, Object> metrics) {
        StringBuilder out = new StringBuilder("{");
        for (Map.Entry<String, Object> e : metrics.entrySet()) {
            if (out.length() > 1) {
                out.append(',');
            }
            Object v = e.getValue();
            boolean finite = v instanceof Number && !Double.isNaN(((Number) v).doubleValue())
                && !Double.isInfinite(((Number) v).doubleValue());
            out.append(quote(e.getKey())).append(':').append(finite ? v.toString() : "null");
        }
        return out.append('}').toString();
    }

    private static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    private static synchronized void emit(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
