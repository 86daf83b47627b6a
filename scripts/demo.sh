#!/usr/bin/env bash
# Installs everything (scripts/setup.sh), starts the embedded local Kafka broker, produces the
# chapter-4 seed data and runs the leaderboard once (--available-now), then prints it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
S=.venv/bin/statectl
$S kafka up
$S produce-test-data leaderboard
if $S run --help >/dev/null 2>&1; then
  $S run leaderboard --config configs/leaderboard.yaml --available-now
  $S query leaderboard --table
fi
