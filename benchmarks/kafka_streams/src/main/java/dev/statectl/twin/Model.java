package dev.statectl.twin;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.TreeSet;

/** The records the leaderboard reads, the one it passes between its stages, and its aggregate. */
final class Model {
  private Model() {}

  /** A value of the score-events topic: {"score": 422, "product_id": 6, "player_id": 1}. */
  @JsonIgnoreProperties(ignoreUnknown = true)
  static final class Score {
    @JsonProperty("player_id")
    public Long playerId;

    @JsonProperty("product_id")
    public Long productId;

    @JsonProperty("score")
    public Double score;
  }

  /** A value of the players or the products table: {"id": 2, "name": "Mitch"}. */
  @JsonIgnoreProperties(ignoreUnknown = true)
  static final class Named {
    @JsonProperty("id")
    public Long id;

    @JsonProperty("name")
    public String name;
  }

  /** A score with its player, between the two joins (never serialized: same sub-topology). */
  record ScoreWithPlayer(Score score, Named player) {}

  /**
   * A score joined with its player and its game: one place on a game's board. The field names are
   * those statectl writes to high-scores, so both outputs read the same.
   */
  @JsonIgnoreProperties(ignoreUnknown = true)
  static final class Entry {
    @JsonProperty("playerId")
    public long playerId;

    @JsonProperty("productId")
    public long productId;

    @JsonProperty("playerName")
    public String playerName;

    @JsonProperty("gameName")
    public String gameName;

    @JsonProperty("score")
    public double score;

    Entry() {}

    Entry(ScoreWithPlayer joined, Named game) {
      this.playerId = joined.player().id != null ? joined.player().id : joined.score().playerId;
      this.productId = game.id != null ? game.id : joined.score().productId;
      this.playerName = joined.player().name;
      this.gameName = game.name;
      this.score = joined.score().score;
    }
  }

  /**
   * A game's high scores as the chapter builds them: a sorted set ordered by score alone, best
   * first, cut to the top N after each insert. Two entries with the same score compare equal, so
   * the set keeps whichever came first and ignores the other (statectl keeps both).
   */
  static final class TopScores {
    private static final Comparator<Entry> BEST_FIRST =
        Comparator.comparingDouble((Entry e) -> e.score).reversed();

    private final TreeSet<Entry> entries = new TreeSet<>(BEST_FIRST);

    TopScores add(Entry entry, int topN) {
      entries.add(entry);
      while (entries.size() > topN) {
        entries.pollLast();
      }
      return this;
    }

    List<Entry> toList() {
      return new ArrayList<>(entries);
    }

    static TopScores of(List<Entry> list) {
      TopScores top = new TopScores();
      top.entries.addAll(list);
      return top;
    }
  }
}
