package cgh.oracle;

import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.protocol.types.BoundField;
import org.apache.kafka.common.protocol.types.Field;
import org.apache.kafka.common.protocol.types.Schema;
import org.apache.kafka.common.protocol.types.TaggedFields;
import org.apache.kafka.common.protocol.types.Type;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Random `__consumer_offsets` records of the share-group (KIP-932) and streams-group (KIP-1071) types, made by
 * Kafka's own generated classes of whatever kafka-group-coordinator jar is on the class path: field values are
 * drawn by walking the generated class's SCHEMAS (tagged fields included, each present or absent at random),
 * the message is built by its generated JsonConverter.read, serialized by the generated class, and printed
 * by JsonConverter.write. Only reflection ties it to a Kafka version, so it runs against 4.0 (whose type 9
 * and early type 11 layouts no later jar has) as well as 4.1-4.4.
 *
 * Output: one JSON line per record, as RecordCodecOracle prints them (type, version, key, value, keyJson,
 * valueJson).
 *
 * Usage: SchemaRecords <records per type and version> <seed> [<type id>:<record name> ...]
 * e.g. `9:ShareGroupPartitionMetadata`; without names, every SHARE_GROUP_ and STREAMS_GROUP_ type of the jar's
 * CoordinatorRecordType (4.1+).
 */
public final class SchemaRecords {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;
    private static final String GENERATED = "org.apache.kafka.coordinator.group.generated.";

    /** One record type: its id and the generated key and value classes. */
    public static final class RecordType {
        final short id;
        final Class<?> key;
        final Class<?> value;

        RecordType(short id, Class<?> key, Class<?> value) {
            this.id = id;
            this.key = key;
            this.value = value;
        }
    }

    private final Random rnd;

    public SchemaRecords(Random rnd) {
        this.rnd = rnd;
    }

    public static void main(String[] args) throws ReflectiveOperationException {
        int n = Integer.parseInt(args[0]);
        SchemaRecords o = new SchemaRecords(new Random(Long.parseLong(args[1])));
        List<RecordType> types = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            String[] spec = args[i].split(":");
            types.add(new RecordType(Short.parseShort(spec[0]), Class.forName(GENERATED + spec[1] + "Key"),
                                     Class.forName(GENERATED + spec[1] + "Value")));
        }
        if (types.isEmpty()) types = shareAndStreamsTypes();
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < n; i++) o.emitAll(out, types);
        System.out.print(out);
    }

    /** Every SHARE_GROUP_ / STREAMS_GROUP_ type of the jar's CoordinatorRecordType enum (Kafka 4.1+). */
    public static List<RecordType> shareAndStreamsTypes() throws ReflectiveOperationException {
        List<RecordType> types = new ArrayList<>();
        Class<?> enumClass = Class.forName(GENERATED + "CoordinatorRecordType");
        for (Object t : enumClass.getEnumConstants()) {
            String name = ((Enum<?>) t).name();
            if (!name.startsWith("SHARE_GROUP_") && !name.startsWith("STREAMS_GROUP_")) continue;
            types.add(new RecordType((Short) enumClass.getMethod("id").invoke(t),
                                     enumClass.getMethod("newRecordKey").invoke(t).getClass(),
                                     enumClass.getMethod("newRecordValue").invoke(t).getClass()));
        }
        return types;
    }

    /** One record of every type and value version. */
    public void emitAll(StringBuilder out, List<RecordType> types) throws ReflectiveOperationException {
        for (RecordType t : types) {
            // Keys are written at their highest version: 0 from 4.1, the record type itself in 4.0.
            short keyVersion = t.key.getField("HIGHEST_SUPPORTED_VERSION").getShort(null);
            ApiMessage key = fromJson(t.key, keyVersion);
            byte[] keyBody = MessageUtil.toVersionPrefixedBytes(keyVersion, key);
            byte[] keyBytes = ByteBuffer.allocate(keyBody.length).putShort(t.id).put(keyBody, 2, keyBody.length - 2).array();
            short low = t.value.getField("LOWEST_SUPPORTED_VERSION").getShort(null);
            short high = t.value.getField("HIGHEST_SUPPORTED_VERSION").getShort(null);
            for (short v = low; v <= high; v++) {
                ApiMessage val = fromJson(t.value, v);
                ObjectNode o = F.objectNode();
                o.put("type", t.id).put("version", v).put("key", hex(keyBytes))
                    .put("value", hex(MessageUtil.toVersionPrefixedBytes(v, val)));
                o.set("keyJson", toJson(key, keyVersion));
                o.set("valueJson", toJson(val, v));
                out.append(o).append('\n');
            }
        }
    }

    /** A random message of `cls` at `version`, built by Kafka's generated `<cls>JsonConverter.read`. */
    private ApiMessage fromJson(Class<?> cls, short version) throws ReflectiveOperationException {
        Schema schema = ((Schema[]) cls.getField("SCHEMAS").get(null))[version];
        Method read = Class.forName(cls.getName() + "JsonConverter").getMethod("read", JsonNode.class, short.class);
        return (ApiMessage) read.invoke(null, randomStruct(schema), version);
    }

    private static JsonNode toJson(ApiMessage msg, short version) throws ReflectiveOperationException {
        Class<?> conv = Class.forName(msg.getClass().getName() + "JsonConverter");
        return (JsonNode) conv.getMethod("write", msg.getClass(), short.class).invoke(null, msg, version);
    }

    /** Kafka's JSON field name of a schema field: snake_case to camelCase ("metadata_hash" -> "metadataHash"). */
    private static String jsonName(String schemaName) {
        StringBuilder b = new StringBuilder();
        boolean up = false;
        for (char c : schemaName.toCharArray()) {
            if (c == '_') {
                up = true;
                continue;
            }
            b.append(up ? Character.toUpperCase(c) : c);
            up = false;
        }
        return b.toString();
    }

    @SuppressWarnings("unchecked")
    private ObjectNode randomStruct(Schema schema) throws ReflectiveOperationException {
        ObjectNode o = F.objectNode();
        for (BoundField f : schema.fields()) {
            if (f.def.type instanceof TaggedFields) {
                java.lang.reflect.Field fields = TaggedFields.class.getDeclaredField("fields");
                fields.setAccessible(true);
                for (Map.Entry<Integer, Field> e : ((Map<Integer, Field>) fields.get(f.def.type)).entrySet()) {
                    if (rnd.nextBoolean()) o.set(jsonName(e.getValue().name), randomValue(e.getValue().type));
                }
            } else {
                o.set(jsonName(f.def.name), randomValue(f.def.type));
            }
        }
        return o;
    }

    private JsonNode randomValue(Type t) throws ReflectiveOperationException {
        if (t.isNullable() && rnd.nextInt(4) == 0) return F.nullNode();
        if (t instanceof Schema) return randomStruct((Schema) t);
        if (t.isArray()) {
            ArrayNode a = F.arrayNode();
            int n = rnd.nextInt(4);
            for (int i = 0; i < n; i++) a.add(randomValue(t.arrayElementType().get()));
            return a;
        }
        switch (t.toString()) {
            case "INT8": return F.numberNode((byte) rnd.nextInt());
            case "INT16": return F.numberNode((short) rnd.nextInt());
            case "UINT16": return F.numberNode(rnd.nextInt(65536));
            case "INT32": return F.numberNode(rnd.nextInt(4) == 0 ? -1 : rnd.nextInt());
            case "INT64": return F.numberNode(rnd.nextInt(4) == 0 ? -1L : rnd.nextLong());
            case "UUID": return F.textNode(uuid().toString());
            case "STRING": case "COMPACT_STRING": case "NULLABLE_STRING": case "COMPACT_NULLABLE_STRING":
                return F.textNode(str());
            default: throw new IllegalArgumentException("no random value for schema type " + t);
        }
    }

    private String str() {
        String[] pool = {"", "g", "orders.v2", "payments-consumer-7", "ünï-cødé", "tab\there", "\uD83D\uDE00 emoji"};
        return rnd.nextInt(3) == 0 ? pool[rnd.nextInt(pool.length)] : "s-" + Long.toHexString(rnd.nextLong());
    }

    private Uuid uuid() {
        return rnd.nextInt(4) == 0 ? Uuid.ZERO_UUID : new Uuid(rnd.nextLong(), rnd.nextLong());
    }

    private static String hex(byte[] b) {
        StringBuilder s = new StringBuilder(b.length * 2);
        for (byte x : b) s.append(String.format("%02x", x));
        return s.toString();
    }
}
