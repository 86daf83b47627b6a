"""Dead-letter topics: what they hold and sending their letters' original records again."""
