#!/usr/bin/env bash
# Installs what statectl needs on a fresh machine, idempotently. Plain (scripts/demo.sh): only what
# the demo runs —
#   - Java 17 and Maven (Debian packages, only if missing and we are root)
#   - a virtualenv in .venv with statectl, its "spark" extra and their pinned Python dependencies
#     (scripts/constraints.txt; the demo reads no s3a:// checkpoint, so no boto3)
#   - the Kafka broker jars and Spark's Kafka connector jars, resolved once from Maven Central
#     into ~/.cache/statectl/jars (later runs are offline)
# Pass --tests (scripts/test.sh and .ci/run do) to also install the tests' own tools:
#   - Chromium (Debian's package) for statectl ui's browser tests, driven by Playwright from the venv
#   - zsh and fish (Debian's packages) for the shell completion tests
#     (these three only as root: without them their tests skip and say why)
#   - the "s3" and "test" extras: boto3, moto's S3 server, pytest, hypothesis, build, playwright
#   - the Spark driver's class-data archive in ~/.cache/statectl/jvm (statectl jars archive)
# Pass --bench to install what the benchmarks need: the "s3" and "test" extras (they start moto's
# S3 server and import the tests' checkpoint builders) and the class-data archive as with --tests,
# kcat (for benchmarks/produce.py), and the leaderboard's Kafka Streams twin (benchmarks/kafka_streams,
# for benchmarks/peer.py; built again only when its sources change).
# The extras installed are written into .venv/.statectl-installed: a later run that wants more
# installs them; one that wants fewer installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

tests=0 bench=0
for arg in "$@"; do
  case $arg in
    --tests) tests=1 ;;
    --bench) bench=1 ;;
    -h|--help) echo "usage: scripts/setup.sh [--tests] [--bench]"; exit 0 ;;
    *) echo "scripts/setup.sh: unknown argument $arg (usage: scripts/setup.sh [--tests] [--bench])" >&2; exit 2 ;;
  esac
done

# Bold only on a terminal: a CI log or a pipe gets plain text.
if [[ -t 2 ]]; then
  log() { printf '\033[1m[setup]\033[0m %s\n' "$*" >&2; }
else
  log() { printf '[setup] %s\n' "$*" >&2; }
fi

need_apt=()
command -v java >/dev/null 2>&1 || need_apt+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || need_apt+=(maven)
# The tests' tools, not required to use statectl: without root the browser tests and the
# completion tests skip and say why.
if ((tests)) && [[ $(id -u) -eq 0 ]]; then
  [[ -x /usr/bin/chromium ]] || need_apt+=(chromium)
  for sh in zsh fish; do command -v $sh >/dev/null 2>&1 || need_apt+=($sh); done
fi
if ((bench)) && ! command -v kcat >/dev/null 2>&1; then need_apt+=(kcat); fi
if ((${#need_apt[@]})); then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    log "installing ${need_apt[*]} (apt)"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    log "missing ${need_apt[*]}: install them (Java 17+, Maven) and run this again"; exit 1
  fi
fi

PY=${PYTHON:-}
if [[ -z "$PY" ]]; then
  # PySpark 4.2 supports Python 3.10 to 3.13 (3.11 first: what CI runs).
  for candidate in python3.11 python3.12 python3.13 python3.10 python3; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(not (3, 10) <= sys.version_info[:2] < (3, 14))'; then
      PY=$candidate; break
    fi
  done
fi
[[ -n "$PY" ]] || { log "Python 3.10, 3.11, 3.12 or 3.13 is required (set PYTHON=/path/to/python)"; exit 1; }

if [[ ! -x .venv/bin/python ]]; then
  log "creating .venv with $PY"
  "$PY" -m venv .venv
fi
# The extras this run wants: the demo runs jobs on Spark and reads nothing on S3; the tests and the
# benchmarks also need boto3, moto's S3 server, pytest and the rest of the "test" extra.
extras=spark
if ((tests || bench)); then extras=spark,s3,test; fi
# The stamp holds the extras installed, comma-separated (an empty one was written by an older
# setup.sh, which always installed spark,s3,test).
stamp=.venv/.statectl-installed
installed=
if [[ -f $stamp ]]; then installed=$(<"$stamp"); installed=${installed:-spark,s3,test}; fi
missing=0 all=$installed
for extra in ${extras//,/ }; do
  if [[ ,$installed, != *,$extra,* ]]; then missing=1; all=${all:+$all,}$extra; fi
done
if [[ ! -f $stamp || $missing -eq 1 || pyproject.toml -nt $stamp || scripts/constraints.txt -nt $stamp ]]; then
  # What was installed before stays in the install (a plain run after --tests keeps the test
  # tools up to date with pyproject.toml rather than leaving them stale).
  log "installing statectl[$all] and its Python dependencies (first time: a few minutes, PySpark is large)"
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -c scripts/constraints.txt -e ".[$all]"
  printf '%s\n' "$all" >"$stamp"
fi

# The project's own modules as bytecode (pip compiles what it installs, not an editable tree): a
# shell with PYTHONDONTWRITEBYTECODE=1 would otherwise compile them again in every process.
.venv/bin/python -m compileall -q statectl jobs >/dev/null
.venv/bin/statectl jars fetch >/dev/null
# The Spark driver's class-data archive: ~3 s off every Spark start (once per Java and PySpark). Making
# it is itself a Spark run (~25 s): the tests and the benchmarks start Spark many times and win that
# back, the demo starts it once and would only wait longer, so a plain run leaves it out (Spark
# starts without it; a later --tests run or `statectl jars archive` makes it).
if ((tests || bench)) && [[ ${STATECTL_JVM_ARCHIVE:-} != off ]]; then
  .venv/bin/statectl jars archive >/dev/null
fi

if ((bench)); then
  twin=benchmarks/kafka_streams
  jar=$twin/target/leaderboard-twin.jar
  if [[ ! -f $jar || -n $(find "$twin/pom.xml" "$twin/src" -newer "$jar" -print -quit) ]]; then
    log "building the Kafka Streams twin ($jar; first time: Maven fetches its dependencies)"
    # Offline first: once ~/.m2 holds the dependencies and plugins, no network is needed.
    if ! mvn -q -B -o -f "$twin/pom.xml" package >/dev/null 2>&1; then
      mvn -q -B -f "$twin/pom.xml" package
    fi
  fi
fi
log "ready: $(.venv/bin/statectl --version) with [$all]; jars in ${STATECTL_JAR_CACHE:-~/.cache/statectl/jars}"
