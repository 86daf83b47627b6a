package dev.statectl.twin;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * What the twin runs with: statectl's leaderboard settings (topic names, top N, bootstrap servers)
 * from a properties file whose keys are the job config's YAML keys flattened with dots
 * ({@code topics.score_events=score-events}); benchmarks/peer.py writes it from
 * configs/leaderboard.yaml. Then the command line: which settings (the book's or Kafka Streams'
 * defaults), where the state goes, and extra Streams properties.
 */
final class TwinConfig {
  enum Settings {
    /** The chapter's app: record cache off, everything else (commit interval too) at defaults. */
    BOOK,
    /** Kafka Streams' defaults: a 10 MB record cache, commits every 30 s (at-least-once). */
    DEFAULTS
  }

  String scoreEvents;
  String players;
  String products;
  String highScores;
  int topN = 3;
  String bootstrapServers;
  Settings settings = Settings.BOOK;
  String applicationId = "leaderboard-twin";
  String stateDir = Path.of(System.getProperty("java.io.tmpdir"), "leaderboard-twin-state").toString();
  boolean exitWhenDone;
  long timeoutMs;
  final Map<String, String> streamsOverrides = new LinkedHashMap<>();

  static final String USAGE =
      String.join(
          "\n",
          "usage: java -jar leaderboard-twin.jar --properties FILE [options]",
          "",
          "  --properties FILE        statectl's leaderboard settings, keys as in the job's YAML:",
          "                           topics.score_events, topics.players, topics.products,",
          "                           topics.high_scores, leaderboard.top_n, kafka.bootstrap_servers",
          "                           (python benchmarks/peer.py --twin-properties CONFIG.yaml writes it)",
          "  --settings book|defaults book: record cache off (statestore.cache.max.bytes=0), the",
          "                           chapter's settings; defaults: Kafka Streams' own (10 MB cache).",
          "                           Both commit every 30 s (commit.interval.ms default, at-least-once);",
          "                           --set processing.guarantee=exactly_once_v2 for exactly once",
          "                           (then the commit interval's default is 100 ms)",
          "  --bootstrap-servers B    overrides kafka.bootstrap_servers",
          "  --application-id ID      consumer group and internal topics' prefix (default leaderboard-twin)",
          "  --state-dir DIR          RocksDB state (default $TMPDIR/leaderboard-twin-state)",
          "  --exit-when-done         stop once every input record is processed and committed",
          "                           (see DoneWatch), then print a JSON summary line and exit",
          "  --timeout-s N            with --exit-when-done: give up after N seconds (exit 4)",
          "  --set KEY=VALUE          any Kafka Streams property (repeatable), e.g. num.stream.threads=2");

  static TwinConfig parse(String[] args) throws IOException {
    TwinConfig c = new TwinConfig();
    Path properties = null;
    List<String> rest = new ArrayList<>(List.of(args));
    while (!rest.isEmpty()) {
      String arg = rest.remove(0);
      int split = arg.indexOf('=');
      if (arg.startsWith("--") && split > 2) {
        // --flag=value, as GNU-style tools (and Python's argparse) accept it
        rest.add(0, arg.substring(split + 1));
        arg = arg.substring(0, split);
      }
      switch (arg) {
        case "--properties" -> properties = Path.of(value(arg, rest));
        case "--settings" -> c.settings = Settings.valueOf(value(arg, rest).toUpperCase());
        case "--bootstrap-servers" -> c.bootstrapServers = value(arg, rest);
        case "--application-id" -> c.applicationId = value(arg, rest);
        case "--state-dir" -> c.stateDir = value(arg, rest);
        case "--exit-when-done" -> c.exitWhenDone = true;
        case "--timeout-s" -> c.timeoutMs = (long) (Double.parseDouble(value(arg, rest)) * 1000);
        case "--set" -> {
          String kv = value(arg, rest);
          int eq = kv.indexOf('=');
          if (eq < 1) {
            throw new IllegalArgumentException("--set wants KEY=VALUE, got " + kv);
          }
          c.streamsOverrides.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        case "-h", "--help" -> throw new HelpRequested();
        default -> throw new IllegalArgumentException("unknown argument " + arg);
      }
    }
    if (properties == null) {
      throw new IllegalArgumentException("--properties FILE is required");
    }
    Properties p = new Properties();
    try (Reader r = Files.newBufferedReader(properties, StandardCharsets.UTF_8)) {
      p.load(r);
    }
    c.scoreEvents = required(p, "topics.score_events", properties);
    c.players = required(p, "topics.players", properties);
    c.products = required(p, "topics.products", properties);
    c.highScores = required(p, "topics.high_scores", properties);
    c.topN = Integer.parseInt(p.getProperty("leaderboard.top_n", "3").trim());
    if (c.bootstrapServers == null) {
      c.bootstrapServers = p.getProperty("kafka.bootstrap_servers", "localhost:9092").trim();
    }
    return c;
  }

  private static String value(String flag, List<String> rest) {
    if (rest.isEmpty()) {
      throw new IllegalArgumentException(flag + " needs a value");
    }
    return rest.remove(0);
  }

  private static String required(Properties p, String key, Path file) {
    String v = p.getProperty(key);
    if (v == null || v.isBlank()) {
      throw new IllegalArgumentException(file + ": no " + key);
    }
    return v.trim();
  }

  static final class HelpRequested extends RuntimeException {
    HelpRequested() {
      super(null, null, false, false);
    }
  }
}
