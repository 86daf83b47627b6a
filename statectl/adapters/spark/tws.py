"""A vectorised input loader for ``transformWithStateInPandas`` on PySpark 4.2.

PySpark 4.2's ``TransformWithStateInPandasSerializer.load_stream`` turns every Arrow batch into
pandas, then walks it row by row (``itertuples``), groups the rows by key with
``itertools.groupby`` and rebuilds a DataFrame per key from the row tuples. For a micro-batch of a
million narrow rows that loop is most of the job's time. This loader hands the processor the
same groups, in the same order, as slices of the converted batch: key boundaries are found with
numpy, each key's rows become ``pdf.iloc[start:end]`` (re-indexed from 0), and a key's rows are
still cut into frames of at most ``arrow_max_records_per_batch`` rows (and the bytes limit). A
batch of only int, float and string columns (the leaderboard's) is converted by pyarrow in one
call, which gives the same frame as PySpark's converter going column by column, in half the time.

Differences from the row path, all in the processor's favour: columns keep the dtypes Arrow's
conversion gave them (the row path re-infers them per frame) and keep their names (the row path
renames columns that are not Python identifiers to ``_0``, ``_1``...). A key whose rows continue in
the next Arrow batch arrives as two frames of the same group, as the row path does when it cuts
at the record limit.

It replaces the method only on the exact PySpark version it was written against and only when
the method is still the one that version ships (a digest of its code is compared), so an
upgrade falls back to PySpark's own loader instead of silently running this one. It is
installed in the Python workers by importing a job module (the processors' module is imported
there to unpickle them), see ``install``.
"""

from __future__ import annotations

import hashlib
import math
import os
from itertools import groupby

#: The PySpark version and ``load_stream`` bytecode digest this loader was checked against.
SUPPORTED_PYSPARK = "4.2.0"
#: Set to ``pyspark`` (in the workers' environment, e.g. ``spark.executorEnv.``) to keep PySpark's loader.
OPT_OUT_ENV = "STATECTL_TWS_LOADER"

_installed = False
_original_load_stream = None


def _code_digest(fn) -> str:
    """A digest of ``fn``'s source text: the same on every Python version (bytecode is not), and
    different as soon as PySpark changes the method. Empty when the source cannot be read."""
    import inspect

    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        return ""
    return hashlib.sha256(source.encode()).hexdigest()


def _plain(arrow_type) -> bool:
    """An Arrow type pyarrow's ``to_pandas`` converts as PySpark's converter does: ints, floats, strings."""
    import pyarrow.types as t

    return (
        t.is_integer(arrow_type)
        or t.is_floating(arrow_type)
        or t.is_string(arrow_type)
        or t.is_large_string(arrow_type)
    )


def grouped_load_stream(self, stream):
    """Drop-in for ``TransformWithStateInPandasSerializer.load_stream`` (see the module doc)."""
    import numpy as np
    import pandas as pd
    from pyspark.sql.pandas import serializers
    from pyspark.sql.streaming.stateful_processor_util import TransformWithStateInPandasFuncMode as Mode

    to_pandas = serializers.ArrowBatchTransformer.to_pandas

    def converted(batch) -> pd.DataFrame:
        if not self._prefer_int_ext_dtype and all(_plain(f.type) for f in batch.schema):
            # Ints, floats and strings convert the same either way; pyarrow does the whole batch
            # in one call, PySpark column by column through a Python converter each.
            return batch.to_pandas()
        columns = to_pandas(
            batch,
            timezone=self._timezone,
            schema=self._input_type,
            struct_in_pandas=self._struct_in_pandas,
            ndarray_as_list=self._ndarray_as_list,
            prefer_int_ext_dtype=self._prefer_int_ext_dtype,
            df_for_struct=self._df_for_struct,
        )
        return pd.concat(columns, axis=1)

    def frames():
        for batch in super(serializers.ArrowStreamPandasSerializer, self).load_stream(stream):
            self._update_batch_size_stats(batch)
            if batch.num_rows == 0:
                continue
            pdf = converted(batch)
            n = len(pdf)
            key_columns = [pdf.iloc[:, o] for o in self.key_offsets]
            starts_mask = np.zeros(n, dtype=bool)
            starts_mask[0] = True
            for column in key_columns:
                values = column.to_numpy()
                starts_mask[1:] |= values[1:] != values[:-1]
            starts = np.flatnonzero(starts_mask).tolist()
            ends = starts[1:] + [n]
            step = self.arrow_max_records_per_batch
            if self.average_arrow_row_size > 0:
                step = min(step, max(1, math.ceil(self.arrow_max_bytes_per_batch / self.average_arrow_row_size)))
            for start, end in zip(starts, ends):
                # Python values as pandas gives them (ints, str, Timestamp), like the row path's.
                key = tuple(column.iloc[start : start + 1].tolist()[0] for column in key_columns)
                for lo in range(start, end, step):
                    yield key, pdf.iloc[lo : min(lo + step, end)].reset_index(drop=True)

    for key, group in groupby(frames(), key=lambda x: x[0]):
        yield (Mode.PROCESS_DATA, key, group)
    yield (Mode.PROCESS_TIMER, None, None)
    yield (Mode.COMPLETE, None, None)


#: Digest of PySpark 4.2.0's own ``TransformWithStateInPandasSerializer.load_stream`` bytecode
#: under CPython 3.11 (the interpreter statectl pins); any other code keeps PySpark's loader.
_PYSPARK_420_DIGEST = "08c4a73a773def8212d22981ec113fb3af34500bc3a8bca3054e3c25b4efbb0d"


def install() -> bool:
    """Use ``grouped_load_stream`` for ``transformWithStateInPandas`` input; True if it is in use.

    Idempotent. Does nothing (returns False) on any other PySpark version, when the method is
    not the one that version ships, or when ``$STATECTL_TWS_LOADER`` is ``pyspark``.
    """
    global _installed, _original_load_stream
    if _installed:
        return True
    if os.environ.get(OPT_OUT_ENV, "").strip().lower() == "pyspark":
        return False
    import pyspark

    if pyspark.__version__ != SUPPORTED_PYSPARK:
        return False  # before the import: PySpark 3.5 has no such serializer
    from pyspark.sql.pandas.serializers import TransformWithStateInPandasSerializer as Serializer

    current = Serializer.__dict__.get("load_stream")
    if current is None or _code_digest(current) != _PYSPARK_420_DIGEST:
        return False
    _original_load_stream = current
    Serializer.load_stream = grouped_load_stream
    _installed = True
    return True


def uninstall() -> None:
    """Put PySpark's own loader back (tests compare the two)."""
    global _installed
    if not _installed:
        return
    from pyspark.sql.pandas.serializers import TransformWithStateInPandasSerializer as Serializer

    Serializer.load_stream = _original_load_stream
    _installed = False


def original_load_stream():
    """PySpark's own loader, whether or not ours is installed."""
    from pyspark.sql.pandas.serializers import TransformWithStateInPandasSerializer as Serializer

    return _original_load_stream if _installed else Serializer.load_stream
