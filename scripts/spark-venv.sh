#!/usr/bin/env bash
# A cached virtualenv with another PySpark version (plus the pandas and pyarrow its
# pandas-based stateful operators need), for the checkpoint matrix tests: they write and restart
# checkpoints with more than the project's own Spark. Idempotent; prints the venv's python.
#   scripts/spark-venv.sh 4.3.0
set -euo pipefail
version=${1:?usage: scripts/spark-venv.sh PYSPARK_VERSION}
root=${STATECTL_SPARK_VENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/statectl/spark-venvs}
venv=$root/pyspark-$version
stamp=$venv/.installed

# pandas, pyarrow and numpy per release line: pip resolves the newest of each, which older
# PySparks were never built against. Pinned where applyInPandasWithState or
# transformWithStateInPandas (the matrix's pandas operators) fail or may fail with the newest.
case $version in
  3.5.*)
    # PySpark 3.5 declares numpy<2 itself. pyarrow 26 needs numpy 2 ("pyarrow requires NumPy 2.0
    # or newer"), and with numpy 2 forced in, 3.5's applyInPandasWithState fails in pyarrow 26's
    # RecordBatch.slice ("'float' object cannot be interpreted as an integer"); 25 works. pandas 3
    # (strings as a new dtype) came after 3.5, whose pandas code is written for 1.x and 2.x (the
    # matrix's queries pass with 3.0 too; users of 3.5 run 2.x).
    pins=("numpy<2" "pyarrow<26" "pandas<3") ;;
  4.0.*)
    # pyarrow 26 and numpy 2 work. pandas 3 came after 4.0, whose pandas code is written for 2.x
    # (the matrix's queries pass with 3.1 too; users of 4.0 run 2.x).
    pins=("pandas<3") ;;
  *)
    pins=() ;;
esac
spec="pyspark[sql]==$version protobuf${pins[*]:+ ${pins[*]}}"

mkdir -p "$root"
# One build per version at a time: .ci/run builds them in the background while the matrix's
# fixtures ask for the same venvs (they wait here for the build, then find it done).
exec 9>"$root/.pyspark-$version.lock"
flock 9
if [[ ! -f $stamp || $(cat "$stamp") != "$spec" ]]; then
  py=${PYTHON:-python3.11}
  command -v "$py" >/dev/null 2>&1 || py=python3
  rm -rf "$venv"
  echo "[spark-venv] installing $spec into $venv (first time: a few minutes)" >&2
  "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null
  "$venv/bin/python" -m pip install -q "pyspark[sql]==$version" protobuf "${pins[@]}"
  echo "$spec" >"$stamp"
fi
echo "$venv/bin/python"
