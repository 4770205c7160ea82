package cgh.oracle;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;

/**
 * Times Kafka's assignor on one case (a JSON line on stdin, same format as ClientAssignorOracle): `warmup`
 * untimed runs, then `runs` timed ones, each with a fresh assignor and fresh Subscription objects, as a
 * leader would. Prints {"nanos": [...], "partitions": total partitions assigned}.
 * Usage: AssignorTiming WARMUP RUNS
 */
public final class AssignorTiming {
    @SuppressWarnings("unchecked")
    public static void main(String[] args) throws Exception {
        int warmup = Integer.parseInt(args[0]);
        int runs = Integer.parseInt(args[1]);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Map<String, Object> c = (Map<String, Object>) Json.parse(in.readLine());
        int assigned = 0;
        for (int i = 0; i < warmup; i++) ClientAssignorOracle.run(c);
        StringBuilder b = new StringBuilder("{\"nanos\":[");
        for (int i = 0; i < runs; i++) {
            long start = System.nanoTime();
            Map<String, List<TopicPartition>> result = ClientAssignorOracle.run(c);
            long took = System.nanoTime() - start;
            if (i > 0) b.append(',');
            b.append(took);
            assigned = 0;
            for (List<TopicPartition> ps : result.values()) assigned += ps.size();
        }
        b.append("],\"partitions\":").append(assigned).append('}');
        System.out.println(b);
    }
}
