"""What a row the leaderboard operator receives is: its ``kind`` byte. Pure constants, shared by the
topology that makes the rows, the operator that receives them and its batch logic."""

#: What a row the operator receives is (column ``kind``). A byte, not a name: every column crosses
#: into Python (Arrow, pandas), and a string per row cost more there than the numbers beside it.
#: ``KIND_DEAD_LETTER``: a finished dead letter (``text``); ``KIND_BAD_SCORE``: a score event Spark
#: could not parse into valid ids and a finite score, raw (``text``: JSON of its key, value, size),
#: which the processor explains and turns into a dead letter.
(KIND_SCORE, KIND_PLAYER, KIND_PLAYER_DELETE, KIND_PRODUCT, KIND_PRODUCT_DELETE, KIND_DEAD_LETTER, KIND_BAD_SCORE) = (
    range(7)
)
KIND_NAMES = ("score", "player", "player_delete", "product", "product_delete", "dead_letter", "bad_score")
