#!/usr/bin/env bash
# Installs everything, the tests' own tools included (scripts/setup.sh --tests), then runs the whole
# test suite against a real Kafka broker and real Spark that the tests start themselves. Extra
# arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --tests
set +e
.venv/bin/python -m pytest "$@"
rc=$?
set -e
if [[ $rc -eq 5 ]]; then
  echo "pytest collected no tests: that is a failure, not a pass" >&2
  exit 1
fi
exit $rc
