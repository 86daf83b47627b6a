"""The leaderboard operators' batch logic on numpy: processing order, as-of table lookups, the
per-bucket join, ranking, dead letters, the tables' bootstrap. Pure functions, tested without a
JVM against a per-key pandas reference; the operators in ``statectl/jobs/leaderboard/operators.py`` call
them.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Iterator

import numpy as np
import pandas as pd

from statectl.formats.dead_letters import dead_letter_json
from statectl.jobs.common import NON_FINITE
from statectl.jobs.leaderboard.kinds import (
    KIND_BAD_SCORE,
    KIND_DEAD_LETTER,
    KIND_PLAYER,
    KIND_PLAYER_DELETE,
    KIND_PRODUCT,
    KIND_PRODUCT_DELETE,
    KIND_SCORE,
)

#: A score's columns as the join hands them on (joined, or as dead letters).
SCORE_COLUMNS = ("player_id", "product_id", "score", "ts", "part", "off")
#: Up to this ``top_n``, ``_at_least_the_cut`` finds each game's cut with ``top_n`` passes of a
#: per-game maximum (no sort); above it, with one sort.
CUT_BY_PASSES_UP_TO = 8


def record_meta(text: str | None) -> tuple[bytes | None, list[tuple[str, bytes | None]]]:
    """A score's key and headers from its ``text`` (``topology._record_meta``: JSON with the
    bytes in base64, or None for a record with neither)."""
    if text is None:
        return None, []
    meta = json.loads(text)
    key = meta.get("k")
    headers = [
        (h["key"], None if h.get("value") is None else base64.b64decode(h["value"])) for h in meta.get("h") or ()
    ]
    return (None if key is None else base64.b64decode(key)), headers


def score_letter(
    reason: str,
    detail: str,
    topic: str,
    part: int,
    off: int,
    ts: int,
    meta: str | None,
    raw: bytes | None,
    max_bytes: int | None = None,
) -> str:
    """The dead letter of a score event: ``reason`` and ``detail``, and the original record (its
    key and headers from ``meta``, its value ``raw``, where it was and its timestamp)."""
    key, headers = record_meta(meta)
    return dead_letter_json(
        reason,
        detail,
        topic,
        int(part),
        int(off),
        int(ts),
        key,
        None if raw is None else bytes(raw),
        headers,
        max_bytes,
    )


def dead_letter(reason: str, detail: str, topic: str, row) -> str:
    """A dead letter's JSON for a valid score row that could not be joined (``SCORE_COLUMNS``,
    ``key``: its key and headers, ``raw``: its value)."""
    return score_letter(reason, detail, topic, row.part, row.off, row.ts, row.key, row.raw)


SCORE_FIELDS = ("player_id", "product_id", "score")
MISTYPED = "player_id and product_id must be non-negative JSON integers, score a JSON number"
NO_VALUE = "the record has no value"
NOT_AN_OBJECT = 'expected a JSON object with "player_id", "product_id" and "score"'
NOT_FINITE = "score must be a finite number, not NaN or an infinity"


def explain_bad_score(value: str | None, size: int | None, max_bytes: int) -> tuple[str, str]:
    """Why a score event that Spark could not parse into valid ids and a finite score failed:
    ``(reason, detail)``. ``value`` is its text (None: a null value), ``size`` its size
    in bytes. Spark's typed parse already decided that it failed; this only names the reason,
    with a strict JSON parser (a record that is not standard JSON is ``malformed_json``)."""
    if value is None or size is None:
        return "null_value", NO_VALUE
    if size > max_bytes:
        return "oversized", f"larger than {max_bytes} bytes"
    try:
        doc = json.loads(value)
    except (ValueError, RecursionError):
        return "malformed_json", NOT_AN_OBJECT
    if not isinstance(doc, dict):
        return "malformed_json", NOT_AN_OBJECT
    missing = [f for f in SCORE_FIELDS if doc.get(f) is None]
    if missing:
        return "missing_field", "missing " + ", ".join(missing)
    if _non_finite(doc["score"]):
        return "non_finite_score", NOT_FINITE
    return "mistyped_field", MISTYPED


def _non_finite(score) -> bool:
    """NaN or an infinity: a JSON NaN/Infinity token, a string naming one (Spark reads those as
    numbers), or a number too large for a double."""
    if isinstance(score, str):
        return score.strip(" ").lower() in NON_FINITE
    if isinstance(score, bool):
        return False
    if isinstance(score, float):
        return not math.isfinite(score)
    if isinstance(score, int):
        try:
            float(score)
        except OverflowError:
            return True
    return False


def bad_score_letter(
    meta: str | None, raw: bytes | None, score_topic: str, part: int, off: int, ts: int, max_bytes: int
) -> tuple[str, str]:
    """A ``KIND_BAD_SCORE`` row's dead letter and reason: ``meta`` its key and headers
    (``record_meta``), ``raw`` its value's bytes (None: a null value)."""
    value = None if raw is None else bytes(raw)
    text = None if value is None else value.decode("utf-8", errors="replace")
    reason, detail = explain_bad_score(text, None if value is None else len(value), max_bytes)
    return score_letter(reason, detail, score_topic, part, off, ts, meta, value, max_bytes), reason


def parse_dead_letters(pdf: pd.DataFrame, score_topic: str, max_bytes: int) -> tuple[list[str], list[str]]:
    """The dead letters of parsing (rows of kinds ``KIND_DEAD_LETTER`` and ``KIND_BAD_SCORE``), in
    the frame's order: ``(letters, reasons)``."""
    letters, reasons = [], []
    rows = zip(
        pdf["kind"].tolist(),
        pdf["text"].tolist(),
        pdf["raw"].tolist(),
        pdf["part"].tolist(),
        pdf["off"].tolist(),
        pdf["ts"].tolist(),
    )
    for kind, text, raw, part, off, ts in rows:
        if kind == KIND_BAD_SCORE:
            text, reason = bad_score_letter(text, raw, score_topic, part, off, ts, max_bytes)
        else:
            reason = json.loads(text)["reason"]
        letters.append(text)
        reasons.append(reason)
    return letters, reasons


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
    order = np.lexsort(
        (joined["off"].to_numpy(), joined["part"].to_numpy(), joined["ts"].to_numpy(), player, -score, game)
    )
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
    """Per game, the rows scoring at least the game's ``top_n``-th best distinct score *value*
    (see ``_rows_at_least_the_cut``)."""
    keep = _rows_at_least_the_cut(joined["score"].to_numpy(), joined["product_id"].to_numpy(), top_n)
    return joined if keep is None else joined.iloc[keep]


def _rows_at_least_the_cut(score, game, top_n: int):
    """The positions (ascending) of the rows scoring at least their game's ``top_n``-th best
    distinct score *value*, or None for all of them.

    A superset of the rows that can rank: those hold at least ``top_n`` distinct (player, score)
    pairs, so the ``top_n``-th best pair scores no less. Found without sorting the batch (a
    sort of every score was most of the ranking's time): ``top_n`` passes, each taking every
    game's best score below the previous pass's. A game with fewer distinct values keeps all
    its rows. Above ``CUT_BY_PASSES_UP_TO``, one sort by game and score does it instead.
    """
    if len(score) <= top_n:
        return None
    codes, games = pd.factorize(game)
    if top_n <= CUT_BY_PASSES_UP_TO:
        cut = np.full(len(games), np.inf)
        for _ in range(top_n):
            below = score < cut[codes]
            best = np.full(len(games), -np.inf)  # -inf: no value left, so every row stays
            np.maximum.at(best, codes[below], score[below])
            cut = best
        return np.flatnonzero(score >= cut[codes])
    order = np.lexsort((-score, codes))
    c, sc = codes[order], score[order]
    new_value = np.r_[True, (c[1:] != c[:-1]) | (sc[1:] != sc[:-1])]
    value_index = np.cumsum(new_value) - 1
    game_starts = np.r_[True, c[1:] != c[:-1]]
    rank = value_index - np.maximum.accumulate(np.where(game_starts, value_index, 0))
    return np.sort(order[rank < top_n])


def as_of_table(kind, cols: dict, scores, key: str, upsert: int, delete: int, stored_values) -> tuple:
    """Each score's table value as of its processing time, for every key at once.

    ``kind`` and ``cols`` (column name -> array) hold one micro-batch's rows of some keys (column
    ``key``): table rows (kinds ``upsert``/``delete``) and scores, whose positions are ``scores``.
    A score's value is that of the latest table row of its key processed before it, or else the
    value stored before the batch: ``stored_values(ids) -> {id: value or None}``, asked once,
    only about keys with a score that no table row precedes. Processing order is (timestamp,
    table rows first, partition, offset), so the table rows that precede a score are exactly
    those of its key with a timestamp at most the score's.

    Returns ``(values, known, finals)``: per score the value known (None for an unknown or
    deleted key) and whether there is one, and ``[(id, value or None)]`` for every key the
    batch updated (None: deleted).

    Only the table rows are sorted (a batch has few). Each score finds its key among them by
    hashing; a key with one table row in the batch (the usual case) needs one comparison of
    timestamps, one with several a binary search over (key, timestamp) packed into one int64
    (with timestamps too far apart for that, their ranks).
    """
    source, pool, pool_known, finals = _as_of_sources(kind, cols, scores, key, upsert, delete, stored_values)
    return pool[source], pool_known[source], finals


def _as_of_sources(kind, cols: dict, scores, key: str, upsert: int, delete: int, stored_values) -> tuple:
    """``as_of_table`` without materialising a value per score: ``(source, pool, pool_known,
    finals)``, where score ``i``'s value is ``pool[source[i]]``. The caller looks up values only
    for the scores it keeps (a few per game), not an object per score of the batch."""
    ids, ts = cols[key], cols["ts"]
    table = np.flatnonzero((kind == upsert) | (kind == delete))
    if len(table) > 1:
        table = table[np.lexsort((cols["off"][table], cols["part"][table], ts[table], ids[table]))]
    t_ids, t_ts = ids[table], ts[table]
    t_known = kind[table] == upsert
    t_values = np.where(t_known, cols["text"][table], None)
    boundary = t_ids[1:] != t_ids[:-1]
    starts = np.flatnonzero(np.r_[True, boundary]) if len(table) else np.zeros(0, dtype=np.int64)
    lasts = np.flatnonzero(np.r_[boundary, True]) if len(table) else np.zeros(0, dtype=np.int64)
    finals = list(zip(t_ids[lasts].tolist(), t_values[lasts].tolist()))

    s_ids, s_ts = ids[scores], ts[scores]
    # Where each score's value comes from: an index into ``table`` (the key's latest table row
    # processed before the score), or -1 until it is known to come from state.
    source = np.full(len(scores), -1)
    if len(table) and len(scores):
        k = pd.Index(t_ids[starts]).get_indexer(s_ids)  # the score's key among the batch's table keys
        has = np.flatnonzero(k >= 0)
        first = starts[k[has]]
        source[has] = np.where(t_ts[first] <= s_ts[has], first, -1)
        several = has[(lasts - starts)[k[has]] > 0]
        if len(several):
            source[several] = _latest_preceding(t_ts, starts, k[several], s_ts[several])
    from_state = np.flatnonzero(source < 0)
    state_values = np.zeros(0, dtype=object)
    if len(from_state):
        wanted = pd.unique(s_ids[from_state])
        stored = stored_values(wanted.tolist())
        state_values = np.array([stored.get(i) for i in wanted.tolist()], dtype=object)
        source[from_state] = len(table) + pd.Index(wanted).get_indexer(s_ids[from_state])  # after the table rows
    pool = np.concatenate([t_values, state_values])
    pool_known = np.concatenate([t_known, np.array([v is not None for v in state_values], dtype=bool)])
    return source, pool, pool_known, finals


def _latest_preceding(t_ts, starts, key_index, s_ts):
    """For scores of keys with several table rows in the batch: the index of the key's latest
    table row with a timestamp at most the score's, or -1. ``t_ts`` is sorted within each key,
    whose rows start at ``starts``; ``key_index`` is each score's key (an index into ``starts``)."""
    row_key = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(t_ts)]))
    low = int(min(t_ts.min(), s_ts.min()))
    span = int(max(t_ts.max(), s_ts.max())) - low + 1
    if len(starts) * span < 2**62:
        t_order, s_order = t_ts - low, s_ts - low
    else:  # timestamps too far apart to pack beside the key: pack their ranks (same order)
        distinct = np.unique(np.r_[t_ts, s_ts])
        t_order, s_order = np.searchsorted(distinct, t_ts), np.searchsorted(distinct, s_ts)
        span = len(distinct)
    j = np.searchsorted(row_key * span + t_order, key_index * span + s_order, side="right") - 1
    return np.where((j >= 0) & (row_key[np.maximum(j, 0)] == key_index), j, -1)


def join_scores(pdf: pd.DataFrame, stored_names, stored_games, top_n: int | None = None) -> tuple:
    """One game bucket's rows of a micro-batch, joined as of processing time: the scores and
    products-table rows of its games, and every players-table row (each bucket holds a replica
    of the players table).

    ``stored_names(ids)`` and ``stored_games(ids)`` return ``{id: name or None}`` as held in state
    before the batch (see ``as_of_table``). Returns ``(joined, unknown_player, unknown_product,
    player_finals, game_finals)``: the scores with a known player and game (``SCORE_COLUMNS``,
    ``name`` and ``game_name``); the scores whose player was unknown at the time; those whose
    player was known but game was not (both ``SCORE_COLUMNS``, ``key``: a score's ``text``, its
    record's key and headers, and ``raw``: its value); and each table's updates
    ``[(id, name or None)]`` (None: deleted).

    With ``top_n``, ``joined`` holds only the joined scores that can rank (at least their game's
    ``top_n``-th best distinct score, see ``_rows_at_least_the_cut``): the ranking needs no
    other, and the names are looked up only for those.
    """
    kind = pdf["kind"].to_numpy()
    cols = {c: pdf[c].to_numpy() for c in (*SCORE_COLUMNS, "text", "raw")}
    scores = np.flatnonzero(kind == KIND_SCORE)
    # Per score an index into a pool of names (and whether that name is known), per table.
    name_at, names, name_known, player_finals = _as_of_sources(
        kind, cols, scores, "player_id", KIND_PLAYER, KIND_PLAYER_DELETE, stored_names
    )
    game_at, games, game_known, game_finals = _as_of_sources(
        kind, cols, scores, "product_id", KIND_PRODUCT, KIND_PRODUCT_DELETE, stored_games
    )
    has_player, has_game = name_known[name_at], game_known[game_at]

    def rows(selected, **extra) -> pd.DataFrame:
        at = scores[selected]
        return pd.DataFrame({**{c: cols[c][at] for c in SCORE_COLUMNS}, **extra})

    ok = np.flatnonzero(has_player & has_game)
    if top_n is not None:
        keep = _rows_at_least_the_cut(cols["score"][scores[ok]], cols["product_id"][scores[ok]], top_n)
        if keep is not None:
            ok = ok[keep]
    joined = rows(ok, name=names[name_at[ok]], game_name=games[game_at[ok]])

    def unjoined_rows(selected) -> pd.DataFrame:
        return rows(selected, key=cols["text"][scores[selected]], raw=cols["raw"][scores[selected]])

    return joined, unjoined_rows(~has_player), unjoined_rows(has_player & ~has_game), player_finals, game_finals


#: Each table's row kinds, by the names ``table_ends`` uses.
TABLE_KINDS = {"players": (KIND_PLAYER, KIND_PLAYER_DELETE), "products": (KIND_PRODUCT, KIND_PRODUCT_DELETE)}


def below_table_ends(pdf: pd.DataFrame, table_ends: dict) -> np.ndarray:
    """The positions of the table rows (upserts and deletes) at offsets below their partition's
    end in ``table_ends`` (``{"players": {partition: end offset}, "products": {...}}``): the
    records that were in the table topics when the run started."""
    kind = pdf["kind"].to_numpy()
    table = np.flatnonzero(np.isin(kind, TABLE_KINDS["players"] + TABLE_KINDS["products"]))
    if not len(table):
        return table
    kinds, part, off = kind[table], pdf["part"].to_numpy()[table], pdf["off"].to_numpy()[table]
    below = np.zeros(len(table), dtype=bool)
    for name, of_table in TABLE_KINDS.items():
        is_table = np.isin(kinds, of_table)
        for partition, end in table_ends.get(name, {}).items():
            below |= is_table & (part == partition) & (off < end)
    return table[below]


def known_from_the_start(pdf: pd.DataFrame, rows) -> pd.DataFrame:
    """``pdf`` with the table rows at positions ``rows`` processed before everything else of the
    batch, whatever their timestamps: they take a timestamp below the batch's earliest, so the
    as-of lookups (``join_scores``) count them before every score, and among themselves they
    keep partition and offset order (a key's latest record wins, as in a compacted topic)."""
    ts = pdf["ts"].to_numpy().copy()
    ts[rows] = ts.min() - 1
    return pdf.assign(ts=ts)


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
        # pd.concat checks every value of an all-null object column (text: null for every score)
        # in Python; joining the columns' arrays does no per-value work.
        return pd.DataFrame({c: np.concatenate([f[c].to_numpy() for f in frames]) for c in frames[0].columns})
    return pd.concat(frames, ignore_index=True)


def unjoined(scores: pd.DataFrame, reason: str, detail: str, score_topic: str) -> pd.DataFrame:
    """``scores`` turned into dead-letter rows (``text``: the letter) with ``reason``."""
    letters = [dead_letter(reason, detail, score_topic, r) for r in scores.itertuples(index=False)]
    return scores.assign(kind=KIND_DEAD_LETTER, text=letters, reason=reason)
