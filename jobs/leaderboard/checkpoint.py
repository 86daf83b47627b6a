"""Which checkpoints this version of the leaderboard can continue (pure: reads a layout, no JVM)."""

from __future__ import annotations


# ---------------------------------------------------------------- the job
def check_checkpoint(layout) -> str | None:
    """Refuse a checkpoint written by an earlier statectl, whose leaderboard kept its state in
    another layout: 0.1 kept one key per player (a ``player`` value state), 0.2 a join operator
    keyed by player bucket and a ranking operator (a ``top`` list state), 0.3 one map-state
    entry per player and per game (``players``, ``games``). Spark would accept any of them and
    this version would start with empty tables, dead-lettering the scores of every known player
    (and with empty top lists, for 0.1 and 0.2)."""
    variables = {(v.name, v.type) for op in layout.operators.values() for v in op.state_variables}
    # Checked newest layout last: 0.2's join operator had a ``players`` map state too.
    if ("player", "ValueState") in variables:
        written_by = "0.1, which kept the players table one key per player"
    elif ("top", "ListState") in variables:
        written_by = "0.2, which kept the players table and the top lists in two operators"
    elif ("players", "MapState") in variables:
        written_by = "0.3, which kept the players and games tables one state entry per id"
    else:
        return None
    return (f"checkpoint {layout.root} was written by statectl {written_by}; this version keeps its state "
            "in one operator keyed by game bucket, the tables in pages of 256 ids, and cannot continue it. "
            "Start a new checkpoint (--checkpoint-dir, or delete this one): the topics are read again "
            "from the beginning")
