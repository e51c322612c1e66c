#!/usr/bin/env bash
# Install the project (pinned versions) and run the default test tiers: pytest, then lit.
# pytest runs on two pytest-xdist workers, a file's tests on one worker (its module fixtures
# are built once); `./scripts/test.sh -n 0` runs in one process, `-n 4` on four workers.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet -e '.[dev]'
python3 -m pytest -q -p no:cacheprovider -n 2 --dist loadfile "$@"
lit -v lit_tests
