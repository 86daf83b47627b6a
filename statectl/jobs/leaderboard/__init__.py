"""The chapter-4 leaderboard: config, pure ranking rules, the stateful operator and its topology."""
