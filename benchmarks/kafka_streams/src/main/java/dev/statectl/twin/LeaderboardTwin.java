package dev.statectl.twin;

import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;

/**
 * statectl's leaderboard on Kafka Streams, for benchmarks/peer.py: same topics, same input
 * records, output in the same format, so the two can be compared game by game.
 *
 * <p>Exit codes: 0 done (with --exit-when-done: everything committed at the log end), 1 Kafka
 * Streams failed, 2 bad arguments, 3 closed but not everything committed, 4 --timeout-s reached.
 */
public final class LeaderboardTwin {
  private LeaderboardTwin() {}

  public static void main(String[] args) throws Exception {
    TwinConfig config;
    try {
      config = TwinConfig.parse(args);
    } catch (TwinConfig.HelpRequested e) {
      System.out.println(TwinConfig.USAGE);
      return;
    } catch (IllegalArgumentException e) {
      System.err.println("leaderboard-twin: " + e.getMessage() + "\n\n" + TwinConfig.USAGE);
      System.exit(2);
      return;
    }
    Topology topology = LeaderboardTopology.build(config);
    Properties props = streamsProperties(config);
    StreamsConfig effective = new StreamsConfig(props);
    System.err.printf(
        "leaderboard-twin: %s settings: statestore.cache.max.bytes=%d, commit.interval.ms=%d, "
            + "num.stream.threads=%d, processing.guarantee=%s; %s -> %s%n",
        config.settings.name().toLowerCase(),
        effective.getLong(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG),
        effective.getLong(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG),
        effective.getInt(StreamsConfig.NUM_STREAM_THREADS_CONFIG),
        effective.getString(StreamsConfig.PROCESSING_GUARANTEE_CONFIG),
        config.scoreEvents,
        config.highScores);

    long started = System.nanoTime();
    KafkaStreams streams = new KafkaStreams(topology, props);
    AtomicReference<Throwable> failure = new AtomicReference<>();
    streams.setUncaughtExceptionHandler(
        e -> {
          failure.compareAndSet(null, e);
          return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });

    if (!config.exitWhenDone) {
      CountDownLatch stopped = new CountDownLatch(1);
      Runtime.getRuntime()
          .addShutdownHook(
              new Thread(
                  () -> {
                    streams.close(Duration.ofSeconds(30));
                    stopped.countDown();
                  }));
      streams.start();
      stopped.await();
      return;
    }

    streams.start();
    String finishedBy = null;
    double doneSeconds = 0;
    long processed = 0;
    boolean committed;
    try (DoneWatch watch = new DoneWatch(streams, config)) {
      while (finishedBy == null) {
        Thread.sleep(200);
        KafkaStreams.State state = streams.state();
        if (failure.get() != null || state == KafkaStreams.State.ERROR
            || state == KafkaStreams.State.NOT_RUNNING || state == KafkaStreams.State.PENDING_ERROR) {
          System.err.println("leaderboard-twin: Kafka Streams stopped: " + state + " " + failure.get());
          streams.close(Duration.ofSeconds(30));
          System.exit(1);
        }
        if (config.timeoutMs > 0 && (System.nanoTime() - started) / 1_000_000 > config.timeoutMs) {
          System.err.println("leaderboard-twin: not done after --timeout-s");
          streams.close(Duration.ofSeconds(30));
          System.exit(4);
        }
        if (state == KafkaStreams.State.RUNNING) {
          finishedBy = watch.check();
        }
      }
      processed = watch.processed();
      doneSeconds = (System.nanoTime() - started) / 1e9;
      streams.close(Duration.ofSeconds(60));
      committed = watch.committedAtLogEnd();
      System.out.printf(
          "{\"settings\":\"%s\",\"statestore_cache_max_bytes\":%d,\"commit_interval_ms\":%d,"
              + "\"num_stream_threads\":%d,\"processing_guarantee\":\"%s\",\"finished_by\":\"%s\","
              + "\"records_processed\":%d,"
              + "\"seconds_to_done\":%.3f,\"seconds\":%.3f,\"committed_at_log_end\":%b,"
              + "\"repartition_topics\":%d}%n",
          config.settings.name().toLowerCase(),
          effective.getLong(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG),
          effective.getLong(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG),
          effective.getInt(StreamsConfig.NUM_STREAM_THREADS_CONFIG),
          effective.getString(StreamsConfig.PROCESSING_GUARANTEE_CONFIG),
          finishedBy,
          processed,
          doneSeconds,
          (System.nanoTime() - started) / 1e9,
          committed,
          watch.repartitionTopics().size());
    }
    System.out.flush();
    System.exit(committed ? 0 : 3);
  }

  static Properties streamsProperties(TwinConfig config) {
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, config.applicationId);
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, config.bootstrapServers);
    props.put(StreamsConfig.STATE_DIR_CONFIG, config.stateDir);
    if (config.settings == TwinConfig.Settings.BOOK) {
      // The chapter turns the record cache off so that every update reaches the output at once;
      // it sets no commit interval, so the default applies (30 s at-least-once).
      props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0L);
    }
    props.putAll(config.streamsOverrides);
    return props;
  }
}
