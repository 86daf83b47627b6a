#!/usr/bin/env bash
# Installs what the demo runs (scripts/setup.sh without --tests: no browser, shells or test extras),
# starts the embedded local Kafka broker, produces the chapter-4 seed data, runs the leaderboard once
# (--available-now) and prints it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
S=.venv/bin/statectl
$S kafka up
$S produce-test-data leaderboard
$S run leaderboard --config configs/leaderboard.yaml --available-now
$S query leaderboard --table
