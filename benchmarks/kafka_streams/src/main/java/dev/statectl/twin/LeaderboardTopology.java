package dev.statectl.twin;

import dev.statectl.twin.Model.Entry;
import dev.statectl.twin.Model.Named;
import dev.statectl.twin.Model.Score;
import dev.statectl.twin.Model.ScoreWithPlayer;
import dev.statectl.twin.Model.TopScores;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The chapter-4 leaderboard:
 *
 * <ol>
 *   <li>score events (unkeyed) are keyed by player id, which marks them for repartitioning;
 *   <li>joined (inner) to the players table, a KTable partitioned like the re-keyed scores;
 *   <li>joined (inner) to the products table, a GlobalKTable every task holds whole, looked up by
 *       the score's product id;
 *   <li>grouped by game (a second repartition), aggregated into each game's top N in a
 *       RocksDB-backed key-value store;
 *   <li>every update of a game's top N is written to the high-scores topic (key: product id).
 * </ol>
 */
final class LeaderboardTopology {
  /** The aggregate's store (RocksDB, with its changelog topic). */
  static final String STORE = "leaderboard-top-scores";

  private LeaderboardTopology() {}

  static Topology build(TwinConfig config) {
    Serde<String> keys = Serdes.String();
    Serde<Score> scores = JsonSerdes.of(Score.class);
    Serde<Named> named = JsonSerdes.of(Named.class);
    Serde<Entry> entries = JsonSerdes.of(Entry.class);
    Serde<TopScores> tops = JsonSerdes.topScores();
    int topN = config.topN;

    StreamsBuilder builder = new StreamsBuilder();

    KStream<String, Score> byPlayer =
        builder.stream(config.scoreEvents, Consumed.with(Serdes.ByteArray(), scores))
            .selectKey((unkeyed, score) -> score.playerId.toString());

    KTable<String, Named> players = builder.table(config.players, Consumed.with(keys, named));
    GlobalKTable<String, Named> games = builder.globalTable(config.products, Consumed.with(keys, named));

    KStream<String, Entry> enriched =
        byPlayer
            .join(players, ScoreWithPlayer::new, Joined.with(keys, scores, named))
            .join(
                games,
                (playerKey, withPlayer) -> withPlayer.score().productId.toString(),
                Entry::new);

    KTable<String, TopScores> highScores =
        enriched
            .groupBy((playerKey, entry) -> Long.toString(entry.productId), Grouped.with(keys, entries))
            .aggregate(
                TopScores::new,
                (game, entry, top) -> top.add(entry, topN),
                Materialized.<String, TopScores, KeyValueStore<Bytes, byte[]>>as(STORE)
                    .withKeySerde(keys)
                    .withValueSerde(tops));

    highScores.toStream().to(config.highScores, Produced.with(keys, tops));
    return builder.build();
  }
}
