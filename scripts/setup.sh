#!/usr/bin/env bash
# Installs everything statectl needs on a fresh machine, idempotently:
#   - Java 17 and Maven (Debian packages, only if missing and we are root)
#   - Chromium (Debian's package) for statectl ui's browser tests, driven by Playwright from the venv
#   - zsh and fish (Debian's packages) for the shell completion tests
#   - a virtualenv in .venv with statectl and its pinned Python dependencies
#   - the Kafka broker jars and Spark's Kafka connector jars, resolved once from Maven Central
#     into ~/.cache/statectl/jars (later runs are offline)
#   - the Spark driver's class-data archive in ~/.cache/statectl/jvm (statectl jars archive)
# Pass --bench to also install kcat (for benchmarks/produce.py) and build the leaderboard's Kafka
# Streams twin (benchmarks/kafka_streams, for benchmarks/peer.py; again only when its sources change).
set -euo pipefail
cd "$(dirname "$0")/.."

# Bold only on a terminal: a CI log or a pipe gets plain text.
if [[ -t 2 ]]; then
  log() { printf '\033[1m[setup]\033[0m %s\n' "$*" >&2; }
else
  log() { printf '[setup] %s\n' "$*" >&2; }
fi

need_apt=()
command -v java >/dev/null 2>&1 || need_apt+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || need_apt+=(maven)
# Not required to use statectl: without root the browser tests skip and say why.
if [[ ! -x /usr/bin/chromium && $(id -u) -eq 0 ]]; then need_apt+=(chromium); fi
# zsh and fish for the completion tests (they skip and say why without them).
if [[ $(id -u) -eq 0 ]]; then for sh in zsh fish; do command -v $sh >/dev/null 2>&1 || need_apt+=($sh); done; fi
if [[ " $* " == *" --bench "* ]] && ! command -v kcat >/dev/null 2>&1; then need_apt+=(kcat); fi
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
stamp=.venv/.statectl-installed
if [[ ! -f $stamp || pyproject.toml -nt $stamp || scripts/constraints.txt -nt $stamp ]]; then
  log "installing Python dependencies (first time: a few minutes, PySpark is large)"
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -c scripts/constraints.txt -e ".[spark,s3,test]"
  touch "$stamp"
fi

# The project's own modules as bytecode (pip compiles what it installs, not an editable tree): a
# shell with PYTHONDONTWRITEBYTECODE=1 would otherwise compile them again in every process.
.venv/bin/python -m compileall -q statectl jobs >/dev/null
.venv/bin/statectl jars fetch >/dev/null
# The Spark driver's class-data archive: ~3 s off every Spark start (once per Java and PySpark).
if [[ ${STATECTL_JVM_ARCHIVE:-} != off ]]; then
  .venv/bin/statectl jars archive >/dev/null
fi

if [[ " $* " == *" --bench "* ]]; then
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
log "ready: $(.venv/bin/statectl --version); jars in ${STATECTL_JAR_CACHE:-~/.cache/statectl/jars}"
