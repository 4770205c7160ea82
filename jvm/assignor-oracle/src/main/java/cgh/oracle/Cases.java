package cgh.oracle;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.ToIntFunction;

/**
 * What every assignor harness does alike, without Kafka's classes (the legacy harness, compiled against
 * kafka-clients before 2.4, shares this file by a symlink, as it does Json.java): the JSON-lines loop and
 * the pieces of a case and a result that do not depend on the kafka-clients version.
 */
final class Cases {

    private Cases() {}

    /** Writes what follows {@code {"id":<id>} in a case's result line. */
    interface Answer {
        void write(Map<String, Object> c, StringBuilder b) throws Exception;
    }

    /**
     * Reads cases as JSON lines from stdin (blank lines skipped) and prints one result line per case:
     * {@code {"id", ...what answer writes}}, or {@code {"id", "error": "ExceptionClass: message"}} when it
     * throws (whatever it wrote is dropped).
     */
    static void serve(Answer answer) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, "UTF-8");
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) continue;
            @SuppressWarnings("unchecked")
            Map<String, Object> c = (Map<String, Object>) Json.parse(line);
            StringBuilder b = new StringBuilder();
            b.append("{\"id\":").append(c.get("id"));
            int start = b.length();
            try {
                answer.write(c, b);
            } catch (Exception e) {
                b.setLength(start);
                b.append(",\"error\":");
                Json.quote(b, e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            b.append('}');
            out.println(b);
            out.flush();
        }
    }

    /** A member's "topics": the JSON list of names. */
    @SuppressWarnings("unchecked")
    static List<String> topics(Map<String, Object> member) {
        List<String> topics = new ArrayList<>();
        for (Object t : (List<Object>) member.get("topics")) topics.add((String) t);
        return topics;
    }

    /** A member's "user_data": base64, or null. */
    static ByteBuffer userData(Map<String, Object> member) {
        return member.get("user_data") == null ? null
                : ByteBuffer.wrap(Base64.getDecoder().decode((String) member.get("user_data")));
    }

    /**
     * Appends {@code ,"assignment":{member: [[topic, p]]}}, members in the map's iteration order, each
     * member's partitions in list order ({@code topic} and {@code partition} read a Kafka TopicPartition).
     */
    static <T> void appendAssignment(StringBuilder b, Map<String, List<T>> result, Function<T, String> topic,
                                     ToIntFunction<T> partition) {
        b.append(",\"assignment\":{");
        boolean first = true;
        for (Map.Entry<String, List<T>> e : result.entrySet()) {
            if (!first) b.append(',');
            first = false;
            Json.quote(b, e.getKey());
            b.append(":[");
            boolean f2 = true;
            for (T tp : e.getValue()) {
                if (!f2) b.append(',');
                f2 = false;
                b.append('[');
                Json.quote(b, topic.apply(tp));
                b.append(',').append(partition.applyAsInt(tp)).append(']');
            }
            b.append(']');
        }
        b.append('}');
    }
}
