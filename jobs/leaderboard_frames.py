"""The leaderboard operators' batch logic on numpy: processing order, as-of table lookups, the
per-bucket join, ranking, dead letters. Pure functions, tested without a JVM against a per-key
pandas reference; the operators in ``jobs/leaderboard_operators.py`` call them.
"""

from __future__ import annotations

import json
from typing import Iterator

import numpy as np
import pandas as pd


def dead_letter(reason: str, detail: str, topic: str, row) -> str:
    """A dead letter's JSON for a valid score row that could not be joined (its text is rebuilt)."""
    score = float(row.score)
    value = {"score": int(score) if score.is_integer() else score, "product_id": int(row.product_id),
             "player_id": int(row.player_id)}
    return json.dumps({"reason": reason, "detail": detail, "sourceTopic": topic, "sourcePartition": int(row.part),
                       "sourceOffset": int(row.off), "sourceKey": None, "value": json.dumps(value)})


def contenders(joined: pd.DataFrame, top_n: int) -> pd.DataFrame:
    """The joined scores of a batch that can enter their game's top list, for all games at once.

    Per game, a (player, score) pair counts once (its earliest row: a record delivered twice
    never takes two places), and only the ``top_n`` best pairs can rank. Kept: those, plus every
    pair tied with the last of them, because ties are decided by processing order, which
    ``merge_top`` applies to this short list.

    A cheap pass first (``_at_least_the_cut``) keeps only the rows scoring at least each game's
    ``top_n``-th distinct pair, so the full sort below runs on a handful of rows per game.
    """
    joined = _at_least_the_cut(joined, top_n)
    if len(joined) <= 1:
        return joined
    game = joined["product_id"].to_numpy()
    score = joined["score"].to_numpy()
    player = joined["player_id"].to_numpy()
    order = np.lexsort((joined["off"].to_numpy(), joined["part"].to_numpy(), joined["ts"].to_numpy(), player,
                        -score, game))
    g, sc, p = game[order], score[order], player[order]
    first = np.r_[True, (g[1:] != g[:-1]) | (sc[1:] != sc[:-1]) | (p[1:] != p[:-1])]
    order, g, sc = order[first], g[first], sc[first]
    index = np.arange(len(order))
    starts = np.r_[True, g[1:] != g[:-1]]
    rank = index - np.maximum.accumulate(np.where(starts, index, 0))
    # The score of each game's top_n-th pair (or its last one): everything at least as good stays.
    ends = np.r_[starts[1:], True]
    at_cut = (rank == top_n - 1) | (ends & (rank < top_n - 1))
    cut_rows = np.flatnonzero(at_cut)  # one per game, in game order
    cut_of_row = cut_rows[np.cumsum(starts) - 1]
    return joined.iloc[order[sc >= sc[cut_of_row]]]


def _at_least_the_cut(joined: pd.DataFrame, top_n: int) -> pd.DataFrame:
    """Per game, the rows scoring at least the ``top_n``-th best distinct (player, score) pair:
    every row of the pairs that can rank (all rows of a pair share its score). Sorted by game and
    score only; each game is then walked from its best score until ``top_n`` pairs were seen."""
    n = len(joined)
    if n <= top_n:
        return joined
    game = joined["product_id"].to_numpy()
    score = joined["score"].to_numpy()
    player = joined["player_id"].to_numpy()
    order = np.lexsort((-score, game))
    g, sc, p = game[order], score[order], player[order]
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]]).tolist()
    keep = []
    for start, end in zip(starts, starts[1:] + [n]):
        seen = set()
        cut = end - 1
        for i in range(start, end):
            seen.add((p[i], sc[i]))
            if len(seen) == top_n:
                cut = i
                break
        # Rows after the cut with the same score stay too: sorted by score descending.
        stop = start + int(np.searchsorted(-sc[start:end], -sc[cut], side="right"))
        keep.append(order[start:stop])
    return joined.iloc[np.concatenate(keep)]


def as_of_table(pdf: pd.DataFrame, key: str, upsert: str, delete: str, stored_values) -> tuple:
    """Each score's table value as of its processing time, for every key in ``pdf`` at once.

    ``pdf`` holds one micro-batch's rows of some keys (column ``key``): table rows (kinds
    ``upsert``/``delete``) and scores. A score's value is that of the latest table row of its key
    processed before it, or else the value stored before the batch: ``stored_values(ids) ->
    {id: value or None}``, asked once, only about keys with a score that no table row precedes.
    Processing order is (timestamp, table rows first, partition, offset), so the table rows that
    precede a score are exactly those of its key with a timestamp at most the score's.
    Returns ``(known, finals)``: per row of ``pdf`` the value known (None for an unknown or
    deleted key, and for table rows), and ``[(id, value or None)]`` for every key the batch
    updated (None: deleted).

    Only the table rows are sorted (a batch has few); each score finds its key's latest
    preceding table row by binary search over (key, timestamp) packed into one int64 (with
    timestamps too far apart for that, their ranks).
    """
    n = len(pdf)
    kind = pdf["kind"].to_numpy(dtype=object)
    ids = pdf[key].to_numpy()
    ts = pdf["ts"].to_numpy()
    is_delete = kind == delete
    table = np.flatnonzero((kind == upsert) | is_delete)
    scores = np.flatnonzero(kind == "score")
    known = np.full(n, None, dtype=object)
    if len(table):
        table = table[np.lexsort((pdf["off"].to_numpy()[table], pdf["part"].to_numpy()[table], ts[table], ids[table]))]
    t_ids = ids[table]
    t_values = np.where(is_delete[table], None, pdf["name"].to_numpy(dtype=object)[table])
    last_of_key = np.r_[t_ids[1:] != t_ids[:-1], True] if len(table) else np.zeros(0, dtype=bool)
    finals = list(zip(t_ids[last_of_key].tolist(), t_values[last_of_key].tolist()))

    s_ids = ids[scores]
    preceding = np.full(len(scores), -1)  # index into ``table`` of the score's latest preceding table row
    if len(table) and len(scores):
        keys = t_ids[last_of_key]  # sorted, unique
        rank = np.searchsorted(keys, s_ids)  # a key without table rows lands beside another key's rows
        low = int(ts.min())
        span = int(ts.max()) - low + 1
        if len(keys) * span < 2**62:
            order_ts = ts - low
        else:  # timestamps too far apart to pack beside the key: pack their ranks (same order)
            distinct, order_ts = np.unique(ts, return_inverse=True)
            span = len(distinct)
        packed_table = np.searchsorted(keys, t_ids) * span + order_ts[table]
        packed_scores = rank * span + order_ts[scores]
        j = np.searchsorted(packed_table, packed_scores, side="right") - 1
        same_key = (j >= 0) & (t_ids[np.maximum(j, 0)] == s_ids)
        preceding = np.where(same_key, j, -1)
    from_table = preceding >= 0
    known[scores[from_table]] = t_values[preceding[from_table]]
    from_state = ~from_table
    if from_state.any():
        wanted = np.unique(s_ids[from_state])
        stored = stored_values(wanted.tolist())
        values = np.array([stored.get(i) for i in wanted.tolist()], dtype=object)
        known[scores[from_state]] = values[np.searchsorted(wanted, s_ids[from_state])]
    return known, finals


def join_scores(pdf: pd.DataFrame, stored_names, stored_games) -> tuple:
    """One game bucket's rows of a micro-batch, joined as of processing time: the scores and
    products-table rows of its games, and every players-table row (each bucket holds a replica
    of the players table).

    ``stored_names(ids)`` and ``stored_games(ids)`` return ``{id: name or None}`` as held in state
    before the batch (see ``as_of_table``). Returns ``(joined, unknown_player, unknown_product,
    player_finals, game_finals)``: the scores with a known player and game, ``name`` and
    ``game_name`` set; the scores whose player was unknown at the time; those whose player was
    known but game was not; and each table's updates ``[(id, name or None)]`` (None: deleted).
    """
    name, player_finals = as_of_table(pdf, "player_id", "player", "player_delete", stored_names)
    game, game_finals = as_of_table(pdf, "product_id", "product", "product_delete", stored_games)
    rows = np.flatnonzero(pdf["kind"].to_numpy(dtype=object) == "score")
    scores = pdf.iloc[rows].reset_index(drop=True)
    score_name, score_game = name[rows], game[rows]
    no_player = pd.isna(score_name)
    no_game = ~no_player & pd.isna(score_game)
    ok = ~no_player & ~no_game
    joined = scores[ok].assign(name=score_name[ok], game_name=score_game[ok])
    return joined, scores[no_player], scores[no_game], player_finals, game_finals


def in_processing_order(pdf: pd.DataFrame) -> pd.DataFrame:
    """Rows of one kind (scores, dead letters) sorted by Kafka timestamp, partition, offset."""
    if len(pdf) <= 1:
        return pdf
    return pdf.iloc[np.lexsort((pdf["off"].to_numpy(), pdf["part"].to_numpy(), pdf["ts"].to_numpy()))]


def one_frame(rows: Iterator[pd.DataFrame]) -> pd.DataFrame:
    """A key's frames as one frame, indexed from 0."""
    frames = list(rows)
    if len(frames) == 1:
        return frames[0].reset_index(drop=True)
    dtypes = [tuple(f.dtypes) for f in frames]
    if all(d == dtypes[0] for d in dtypes):
        # pd.concat checks every value of an all-null object column (name, dlq: null for every
        # score) in Python; joining the columns' arrays is two orders of magnitude faster.
        return pd.DataFrame({c: np.concatenate([f[c].to_numpy() for f in frames]) for c in frames[0].columns})
    return pd.concat(frames, ignore_index=True)


def unjoined(scores: pd.DataFrame, reason: str, detail: str, score_topic: str) -> pd.DataFrame:
    """``scores`` turned into dead-letter rows (kind ``dlq``) with ``reason``."""
    letters = [dead_letter(reason, detail, score_topic, r) for r in scores.itertuples(index=False)]
    return scores.assign(kind="dlq", dlq=letters, reason=reason)
