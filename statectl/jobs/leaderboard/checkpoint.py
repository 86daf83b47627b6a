"""Which checkpoints this version of the leaderboard can continue (pure: reads a layout, no JVM)."""

from __future__ import annotations


# ---------------------------------------------------------------- the job
def check_checkpoint(layout, config=None) -> str | None:
    """Refuse a checkpoint this run cannot continue. Written by an earlier statectl, whose
    leaderboard kept its state in another layout: 0.1 kept one key per player (a ``player``
    value state), 0.2 a join operator keyed by player bucket and a ranking operator (a ``top``
    list state), 0.3 one map-state entry per player and per game (``players``, ``games``). Or
    written with the other ``leaderboard.layout``: ``buckets`` keeps the tables and the top lists
    in one operator, ``sharded`` the tables in one and the top lists in a second. Spark would
    accept any of them and this run would start with empty tables, dead-lettering the scores of
    every known player (and with empty top lists)."""
    variables = {(v.name, v.type) for op in layout.operators.values() for v in op.state_variables}
    # Checked newest layout last: 0.2's join operator had a ``players`` map state too.
    if ("player", "ValueState") in variables:
        written_by = "0.1, which kept the players table one key per player"
    elif ("top", "ListState") in variables:
        written_by = "0.2, which kept the players table and the top lists in two operators"
    elif ("players", "MapState") in variables:
        written_by = "0.3, which kept the players and games tables one state entry per id"
    else:
        return _other_layout(layout, config)
    return (
        f"checkpoint {layout.root} was written by statectl {written_by}; this version keeps its state "
        "in one operator keyed by game bucket, the tables in pages of 256 ids, and cannot continue it. "
        "Start a new checkpoint (--checkpoint-dir, or delete this one): the topics are read again "
        "from the beginning"
    )


def _other_layout(layout, config) -> str | None:
    """The checkpoint's ``leaderboard.layout`` when it is not the config's."""
    with_tables = [
        oid for oid, op in layout.operators.items() if any(v.name == "player_pages" for v in op.state_variables)
    ]
    if not with_tables:
        return None  # a new checkpoint (or one without the leaderboard's state)
    written = "buckets" if any(v.name == "top" for v in layout.operators[with_tables[0]].state_variables) else "sharded"
    wanted = config.leaderboard.layout if config is not None else "buckets"
    if written == wanted:
        return None
    return (
        f"checkpoint {layout.root} was written with leaderboard.layout: {written} and this run asks for "
        f"{wanted}; a checkpoint keeps its layout for life. Set leaderboard.layout: {written} to continue it, "
        "or start a new checkpoint (--checkpoint-dir, or delete this one): the topics are read again "
        "from the beginning"
    )
