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


def best_per_game(scores: pd.DataFrame, top_n: int) -> pd.DataFrame:
    """The rows that can still matter: per player and game, the player's ``top_n`` best distinct scores.

    A player can hold at most ``top_n`` places in a game, so a score with ``top_n`` better (or
    equal and earlier) ones of the same player in the same game and batch can never be shown.
    Done with numpy over all the players of a bucket at once.
    """
    if len(scores) <= 1:
        return scores
    player = scores["player_id"].to_numpy()
    game = scores["product_id"].to_numpy()
    score = scores["score"].to_numpy()
    order = np.lexsort((scores["off"].to_numpy(), scores["part"].to_numpy(), scores["ts"].to_numpy(), -score,
                        game, player))
    p, g, sc = player[order], game[order], score[order]
    first = np.ones(len(order), dtype=bool)
    # The earliest of equal (player, game, score) rows.
    first[1:] = (p[1:] != p[:-1]) | (g[1:] != g[:-1]) | (sc[1:] != sc[:-1])
    order, p, g = order[first], p[first], g[first]
    index = np.arange(len(order))
    starts = np.r_[True, (p[1:] != p[:-1]) | (g[1:] != g[:-1])]
    rank = index - np.maximum.accumulate(np.where(starts, index, 0))
    return scores.iloc[order[rank < top_n]]


def as_of_table(pdf: pd.DataFrame, key: str, upsert: str, delete: str, stored_values) -> tuple:
    """Each row's table value as of its processing time, for every key in ``pdf`` at once.

    ``pdf`` holds one micro-batch's rows of some keys (column ``key``): table rows (kinds
    ``upsert``/``delete``) and others. Rows are put in processing order per key; a row's value is
    the latest table row of its key at or before it, or else the value stored before the batch:
    ``stored_values(ids) -> {id: value or None}``, asked once, only about keys with a score that
    no table row precedes. Returns ``(order, known, finals)``: ``pdf`` positions in processing
    order, the value known at each of them (None: unknown or deleted), and ``[(id, value or
    None)]`` for every key the batch updated (None: deleted).
    """
    n = len(pdf)
    kind = pdf["kind"].to_numpy(dtype=object)
    ids = pdf[key].to_numpy()
    is_delete = kind == delete
    is_table = (kind == upsert) | is_delete
    order = np.lexsort((pdf["off"].to_numpy(), pdf["part"].to_numpy(), np.where(is_table, 0, 1),
                        pdf["ts"].to_numpy(), ids))
    k, table, deleted = ids[order], is_table[order], is_delete[order]
    names = pdf["name"].to_numpy(dtype=object)[order]
    index = np.arange(n)
    segment_start = np.maximum.accumulate(np.where(np.r_[True, k[1:] != k[:-1]], index, 0))
    last_table = np.maximum.accumulate(np.where(table, index, -1))
    after_table = last_table >= segment_start  # a table row of the same key precedes (or is) this row
    known = np.full(n, None, dtype=object)
    source = last_table[after_table]
    known[after_table] = np.where(deleted[source], None, names[source])

    from_state = (kind[order] == "score") & ~after_table
    if from_state.any():
        wanted = np.unique(k[from_state])
        stored = stored_values(wanted.tolist())
        values = np.array([stored.get(i) for i in wanted.tolist()], dtype=object)
        known[from_state] = values[np.searchsorted(wanted, k[from_state])]

    segment_end = np.r_[k[1:] != k[:-1], True] if n else np.zeros(0, dtype=bool)
    final_rows = last_table[segment_end]
    final_rows = final_rows[final_rows >= segment_start[segment_end]]
    finals = list(zip(k[final_rows].tolist(), np.where(deleted[final_rows], None, names[final_rows]).tolist()))
    return order, known, finals


def join_bucket(pdf: pd.DataFrame, top_n: int, stored_names, stored_games) -> tuple:
    """One player bucket's rows of a micro-batch, joined as of processing time: its players'
    scores and players-table rows, and every products-table row (the products table is
    replicated to every bucket, a global table).

    ``stored_names(ids)`` and ``stored_games(ids)`` return ``{id: name or None}`` as held in state
    before the batch (see ``as_of_table``). Returns ``(joined, unknown_player, unknown_product,
    player_finals, game_finals)``: the scores with a known player and game that can still matter
    (``best_per_game``) with ``name`` and ``game_name`` set; the scores whose player was unknown
    at the time; those whose player was known but game was not (every one of them: the filter
    comes after); and each table's updates ``[(id, name or None)]`` (None: deleted).
    """
    n = len(pdf)
    p_order, p_known, player_finals = as_of_table(pdf, "player_id", "player", "player_delete", stored_names)
    g_order, g_known, game_finals = as_of_table(pdf, "product_id", "product", "product_delete", stored_games)
    name = np.full(n, None, dtype=object)
    name[p_order] = p_known
    game = np.full(n, None, dtype=object)
    game[g_order] = g_known
    rows = p_order[pdf["kind"].to_numpy(dtype=object)[p_order] == "score"]  # processing order per player
    scores = pdf.iloc[rows].reset_index(drop=True)
    score_name, score_game = name[rows], game[rows]
    no_player = pd.isna(score_name)
    no_game = ~no_player & pd.isna(score_game)
    ok = ~no_player & ~no_game
    joined = scores[ok].assign(name=score_name[ok], game_name=score_game[ok])
    return best_per_game(joined, top_n), scores[no_player], scores[no_game], player_finals, game_finals


def rank_game(pdf: pd.DataFrame, top_n: int) -> tuple[list[str], pd.DataFrame]:
    """One game's rows of a micro-batch: joined scores and dead letters.

    Returns the dead letters (JSON, in processing order) and the batch's best ``top_n`` scores:
    best first, among equal scores the earliest, one place per (player, score).
    """
    kind = pdf["kind"].to_numpy(dtype=object)
    ts, part, off = pdf["ts"].to_numpy(), pdf["part"].to_numpy(), pdf["off"].to_numpy()
    dlq = np.flatnonzero(kind == "dlq")
    dlq = dlq[np.lexsort((off[dlq], part[dlq], ts[dlq]))]
    letters = pdf["dlq"].to_numpy(dtype=object)[dlq].tolist()
    scores = np.flatnonzero(kind == "score")
    rank = scores[np.lexsort((off[scores], part[scores], ts[scores], -pdf["score"].to_numpy()[scores]))]
    players, values = pdf["player_id"].to_numpy(), pdf["score"].to_numpy()
    best, seen = [], set()
    for i in rank.tolist():
        pair = (players[i], values[i])
        if pair in seen:
            continue
        seen.add(pair)
        best.append(i)
        if len(best) == top_n:
            break
    return letters, pdf.iloc[best]


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
    return scores.assign(kind="dlq", dlq=letters)
