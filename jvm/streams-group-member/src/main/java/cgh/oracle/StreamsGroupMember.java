package cgh.oracle;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.StreamsGroupHeartbeatRequestData;
import org.apache.kafka.common.message.StreamsGroupHeartbeatResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.requests.StreamsGroupHeartbeatRequest;
import org.apache.kafka.common.requests.StreamsGroupHeartbeatResponse;

/**
 * One member of a KIP-1071 streams group, driven by hand with Kafka's own StreamsGroupHeartbeat request and
 * response classes over a plain socket to a single broker (its own group coordinator): it joins with a
 * topology (one subtopology reading a source topic, with a state store changelog), heartbeats until it owns
 * the tasks the coordinator assigned, then leaves. The coordinator writes every streams-group record type
 * of `__consumer_offsets` on the way (17, 19-23, and the tombstones of the leaving member). A Kafka Streams
 * application would do the same through kafka-streams, which is not part of the project's jar sets.
 *
 * Prints one line per heartbeat response (member epoch, error, active tasks).
 *
 * Usage: StreamsGroupMember <host> <port> <group> <source topic> <changelog topic> <heartbeats before leaving>
 */
public final class StreamsGroupMember {
    private final Socket socket;
    private final DataOutputStream out;
    private final DataInputStream in;
    private int correlationId = 0;

    private StreamsGroupMember(String host, int port) throws Exception {
        socket = new Socket(host, port);
        out = new DataOutputStream(socket.getOutputStream());
        in = new DataInputStream(socket.getInputStream());
    }

    private StreamsGroupHeartbeatResponseData heartbeat(StreamsGroupHeartbeatRequestData data) throws Exception {
        short version = ApiKeys.STREAMS_GROUP_HEARTBEAT.latestVersion();
        RequestHeader header = new RequestHeader(ApiKeys.STREAMS_GROUP_HEARTBEAT, version, "cgh-streams-member", ++correlationId);
        ByteBuffer request = new StreamsGroupHeartbeatRequest.Builder(data).build(version).serializeWithHeader(header);
        out.writeInt(request.remaining());
        out.write(request.array(), request.arrayOffset() + request.position(), request.remaining());
        out.flush();
        byte[] response = new byte[in.readInt()];
        in.readFully(response);
        StreamsGroupHeartbeatResponse parsed =
            (StreamsGroupHeartbeatResponse) AbstractResponse.parseResponse(ByteBuffer.wrap(response), header);
        return parsed.data();
    }

    private static List<StreamsGroupHeartbeatRequestData.TaskIds> owned(List<StreamsGroupHeartbeatResponseData.TaskIds> tasks) {
        List<StreamsGroupHeartbeatRequestData.TaskIds> l = new ArrayList<>();
        for (StreamsGroupHeartbeatResponseData.TaskIds t : tasks)
            l.add(new StreamsGroupHeartbeatRequestData.TaskIds().setSubtopologyId(t.subtopologyId()).setPartitions(t.partitions()));
        return l;
    }

    public static void main(String[] args) throws Exception {
        String group = args[2], source = args[3], changelog = args[4];
        int heartbeats = Integer.parseInt(args[5]);
        StreamsGroupMember member = new StreamsGroupMember(args[0], Integer.parseInt(args[1]));
        String memberId = Uuid.randomUuid().toString();
        StreamsGroupHeartbeatRequestData.Subtopology sub = new StreamsGroupHeartbeatRequestData.Subtopology()
            .setSubtopologyId("0").setSourceTopics(List.of(source))
            .setStateChangelogTopics(List.of(new StreamsGroupHeartbeatRequestData.TopicInfo().setName(changelog)
                .setTopicConfigs(List.of(new StreamsGroupHeartbeatRequestData.KeyValue().setKey("cleanup.policy").setValue("compact")))));
        StreamsGroupHeartbeatRequestData join = new StreamsGroupHeartbeatRequestData()
            .setGroupId(group).setMemberId(memberId).setMemberEpoch(0).setEndpointInformationEpoch(-1)
            .setRebalanceTimeoutMs(30000)
            .setTopology(new StreamsGroupHeartbeatRequestData.Topology().setEpoch(1).setSubtopologies(List.of(sub)))
            .setProcessId(Uuid.randomUuid().toString())
            .setUserEndpoint(new StreamsGroupHeartbeatRequestData.Endpoint().setHost("localhost").setPort(8080))
            .setClientTags(List.of(new StreamsGroupHeartbeatRequestData.KeyValue().setKey("zone").setValue("z1")))
            .setActiveTasks(List.of()).setStandbyTasks(List.of()).setWarmupTasks(List.of());
        StreamsGroupHeartbeatResponseData r = member.heartbeat(join);
        System.out.println("joined epoch=" + r.memberEpoch() + " error=" + r.errorCode() + " " + r.errorMessage()
                           + " status=" + r.status() + " active=" + r.activeTasks());
        List<StreamsGroupHeartbeatRequestData.TaskIds> active = r.activeTasks() == null ? List.of() : owned(r.activeTasks());
        int epoch = r.memberEpoch();
        for (int i = 0; i < heartbeats; i++) {
            Thread.sleep(Math.min(500, Math.max(100, r.heartbeatIntervalMs())));
            r = member.heartbeat(new StreamsGroupHeartbeatRequestData().setGroupId(group).setMemberId(memberId)
                .setMemberEpoch(epoch).setEndpointInformationEpoch(-1)
                .setActiveTasks(active).setStandbyTasks(List.of()).setWarmupTasks(List.of()));
            if (r.activeTasks() != null) active = owned(r.activeTasks());
            epoch = r.memberEpoch();
            System.out.println("heartbeat epoch=" + epoch + " error=" + r.errorCode() + " status=" + r.status()
                               + " active=" + r.activeTasks());
        }
        r = member.heartbeat(new StreamsGroupHeartbeatRequestData().setGroupId(group).setMemberId(memberId)
            .setMemberEpoch(-1).setEndpointInformationEpoch(-1));
        System.out.println("left epoch=" + r.memberEpoch() + " error=" + r.errorCode());
        member.socket.close();
    }
}
