// Kafka's Java producer on the exporter's own records: the keys, values and
// headers the exporter sent (a file of them, written by bench/kafka.ts), with
// the same partition count, acks=all and idempotence. Run with the broker's
// jars as a single-file program:
//   java -cp '.cache/kafka/<v>/libs/*' scripts/kafka/KeyedProducerPerf.java BROKERS TOPIC PARTITIONS RECORDS_FILE COMPRESSION
// Prints one line: "<records> records sent, <records/s> records/sec ...".
import java.io.DataInputStream;
import java.io.BufferedInputStream;
import java.io.FileInputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class KeyedProducerPerf {
  public static void main(String[] args) throws Exception {
    String brokers = args[0], topic = args[1];
    int partitions = Integer.parseInt(args[2]);
    String file = args[3], compression = args[4];
    List<byte[]> keys = new ArrayList<>(), values = new ArrayList<>();
    List<RecordHeaders> headers = new ArrayList<>();
    try (DataInputStream in = new DataInputStream(new BufferedInputStream(new FileInputStream(file), 1 << 20))) {
      int n = in.readInt();
      for (int i = 0; i < n; i++) {
        byte[] k = new byte[in.readInt()]; in.readFully(k);
        byte[] v = new byte[in.readInt()]; in.readFully(v);
        byte[] t = new byte[in.readInt()]; in.readFully(t);
        byte[] e = new byte[in.readInt()]; in.readFully(e);
        keys.add(k); values.add(v);
        RecordHeaders h = new RecordHeaders();
        h.add(new RecordHeader("type", t));
        h.add(new RecordHeader("encoding", e));
        headers.add(h);
      }
    }
    Properties admin = new Properties();
    admin.put("bootstrap.servers", brokers);
    try (Admin a = Admin.create(admin)) {
      a.createTopics(Set.of(new NewTopic(topic, partitions, (short) 1))).all().get();
    }
    Properties p = new Properties();
    p.put("bootstrap.servers", brokers);
    p.put("acks", "all");
    p.put("enable.idempotence", "true");
    p.put("compression.type", compression);
    p.put("batch.size", "262144");
    p.put("linger.ms", "5");
    p.put("key.serializer", ByteArraySerializer.class.getName());
    p.put("value.serializer", ByteArraySerializer.class.getName());
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
      producer.partitionsFor(topic);
      int n = keys.size();
      // Warm-up (JIT, connections), not timed: as the exporter's benchmark does.
      for (int i = 0; i < Math.min(20_000, n); i++) producer.send(new ProducerRecord<>(topic, null, keys.get(i), values.get(i), headers.get(i)));
      producer.flush();
      long t0 = System.nanoTime();
      for (int i = 0; i < n; i++) producer.send(new ProducerRecord<>(topic, null, keys.get(i), values.get(i), headers.get(i)));
      producer.flush();
      double s = (System.nanoTime() - t0) / 1e9;
      System.out.printf("%d records sent, %.1f records/sec (keyed, %d partitions, %s)%n", n, n / s, partitions, compression);
    }
  }
}
