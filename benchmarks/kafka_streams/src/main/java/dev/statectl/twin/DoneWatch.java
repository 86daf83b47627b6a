package dev.statectl.twin;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.KafkaStreams;

/**
 * When the twin is done with a benchmark's input: every score event (and every record of the
 * repartition topics it feeds) processed, and its effect committed.
 *
 * <p>The exact test is the consumer group's committed offsets at the log end of the score-events,
 * players and repartition topics. With the commit interval at its default (30 s), waiting for the
 * next regular commit would add up to 30 s to every run, so the watch also recognises the moment
 * processing has caught up, from the client's own metrics, and then the caller closes Kafka
 * Streams, which commits what was processed. Caught up means, twice in a row with no record
 * processed in between: every record up to the log end (read with the admin client) of the
 * score-events and repartition topics consumed; as many records processed as consumed; the
 * producer's buffer empty and no request in flight (so nothing more is about to land in a
 * repartition topic). After the close the caller checks the committed offsets again: that check,
 * not the metrics, says whether the run counts.
 *
 * <p>Under {@code processing.guarantee=exactly_once_v2} the repartition topics are written in
 * transactions, so their log end counts commit markers besides records and "consumed to the end"
 * by record count never holds: the committed offsets decide alone. That costs nothing, as the
 * commit interval's default is then 100 ms, and Kafka Streams commits its consumer's position,
 * which moves past the markers.
 */
final class DoneWatch implements AutoCloseable {
  private final KafkaStreams streams;
  private final Admin admin;
  private final String applicationId;
  private final List<String> inputs;
  private List<String> repartitionTopics;
  private List<TopicPartition> partitions;
  private long lastProcessed = -1;
  private int caughtUpChecks;

  DoneWatch(KafkaStreams streams, TwinConfig config) {
    this.streams = streams;
    this.applicationId = config.applicationId;
    this.inputs = List.of(config.scoreEvents, config.players);
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, config.bootstrapServers);
    p.put(AdminClientConfig.CLIENT_ID_CONFIG, config.applicationId + "-done-watch");
    this.admin = Admin.create(p);
  }

  List<String> repartitionTopics() {
    return repartitionTopics == null ? List.of() : repartitionTopics;
  }

  /** Whether everything is committed at the log end (after the close: whether the run counts). */
  boolean committedAtLogEnd() throws ExecutionException, InterruptedException {
    return committedAtLogEnd(logEnds());
  }

  /** Asked every few hundred ms while RUNNING: "commit" or "caught-up" when done, else null. */
  String check() throws ExecutionException, InterruptedException {
    Map<TopicPartition, Long> ends = logEnds();
    if (committedAtLogEnd(ends)) {
      return "commit";
    }
    Counts counts = counts();
    boolean consumedToEnd = true;
    for (String topic : streamTopics()) {
      long end = 0;
      for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
        if (e.getKey().topic().equals(topic)) {
          end += e.getValue();
        }
      }
      // Offsets start at 0 on these fresh topics: end offset = record count, unless they are
      // written in transactions (exactly once: see above).
      if (counts.consumed.getOrDefault(tag(topic), 0L) < end) {
        consumedToEnd = false;
      }
    }
    long consumedAll = counts.consumed.values().stream().mapToLong(Long::longValue).sum();
    boolean caughtUp = consumedToEnd && counts.processed == consumedAll && counts.producerIdle;
    if (caughtUp && counts.processed == lastProcessed) {
      caughtUpChecks++;
    } else {
      caughtUpChecks = caughtUp ? 1 : 0;
    }
    lastProcessed = counts.processed;
    return caughtUpChecks >= 2 ? "caught-up" : null;
  }

  long processed() {
    return counts().processed;
  }

  private List<String> streamTopics() {
    List<String> topics = new ArrayList<>();
    topics.add(inputs.get(0));
    topics.addAll(repartitionTopics());
    return topics;
  }

  private Map<TopicPartition, Long> logEnds() throws ExecutionException, InterruptedException {
    if (partitions == null) {
      // Kafka Streams creates its repartition topics before it processes anything (RUNNING).
      List<String> internal = new ArrayList<>();
      for (String name : new TreeSet<>(admin.listTopics().names().get())) {
        if (name.startsWith(applicationId + "-") && name.endsWith("-repartition")) {
          internal.add(name);
        }
      }
      List<String> all = new ArrayList<>(inputs);
      all.addAll(internal);
      List<TopicPartition> tps = new ArrayList<>();
      for (TopicDescription d : admin.describeTopics(all).allTopicNames().get().values()) {
        d.partitions().forEach(p -> tps.add(new TopicPartition(d.name(), p.partition())));
      }
      repartitionTopics = internal;
      partitions = tps;
    }
    Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
    partitions.forEach(tp -> latest.put(tp, OffsetSpec.latest()));
    Map<TopicPartition, Long> ends = new HashMap<>();
    for (Map.Entry<TopicPartition, ListOffsetsResultInfo> e :
        admin.listOffsets(latest).all().get().entrySet()) {
      ends.put(e.getKey(), e.getValue().offset());
    }
    return ends;
  }

  private boolean committedAtLogEnd(Map<TopicPartition, Long> ends)
      throws ExecutionException, InterruptedException {
    Map<TopicPartition, OffsetAndMetadata> committed =
        admin.listConsumerGroupOffsets(applicationId).partitionsToOffsetAndMetadata().get();
    for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
      if (e.getValue() == 0) {
        continue;
      }
      OffsetAndMetadata c = committed.get(e.getKey());
      if (c == null || c.offset() < e.getValue()) {
        return false;
      }
    }
    return true;
  }

  private record Counts(Map<String, Long> consumed, long processed, boolean producerIdle) {}

  /** Records consumed per topic by the stream threads' main consumers; records processed; producer idle. */
  private Counts counts() {
    Map<String, Long> consumed = new HashMap<>();
    long processed = 0;
    boolean idle = true;
    double bufferTotal = 0;
    double bufferAvailable = 0;
    for (Map.Entry<MetricName, ? extends Metric> e : streams.metrics().entrySet()) {
      MetricName n = e.getKey();
      String client = n.tags().getOrDefault("client-id", "");
      if (n.group().equals("stream-thread-metrics") && n.name().equals("process-total")) {
        processed += number(e.getValue());
      } else if (n.group().equals("consumer-fetch-manager-metrics")
          && n.name().equals("records-consumed-total")
          && n.tags().containsKey("topic")
          && client.endsWith("-consumer")
          && !client.endsWith("-restore-consumer")
          && !client.endsWith("-global-consumer")) {
        consumed.merge(n.tags().get("topic"), number(e.getValue()), Long::sum);
      } else if (n.group().equals("producer-metrics") && client.contains("StreamThread")) {
        switch (n.name()) {
          case "requests-in-flight" -> idle &= number(e.getValue()) == 0;
          case "buffer-total-bytes" -> bufferTotal += ((Number) e.getValue().metricValue()).doubleValue();
          case "buffer-available-bytes" ->
              bufferAvailable += ((Number) e.getValue().metricValue()).doubleValue();
          default -> {}
        }
      }
    }
    return new Counts(consumed, processed, idle && bufferAvailable >= bufferTotal);
  }

  /** The consumer's metrics name a topic with its dots replaced by underscores. */
  private static String tag(String topic) {
    return topic.replace('.', '_');
  }

  private static long number(Metric m) {
    Object v = m.metricValue();
    return v instanceof Number num ? (long) num.doubleValue() : 0;
  }

  @Override
  public void close() {
    admin.close();
  }
}
