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
if [[ ! -f $stamp ]]; then
  py=${PYTHON:-python3.11}
  command -v "$py" >/dev/null 2>&1 || py=python3
  rm -rf "$venv"
  mkdir -p "$root"
  echo "[spark-venv] installing PySpark $version into $venv (first time: a few minutes)" >&2
  "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null
  "$venv/bin/python" -m pip install -q "pyspark[sql]==$version" protobuf
  touch "$stamp"
fi
echo "$venv/bin/python"
