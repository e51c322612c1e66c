#!/usr/bin/env bash
# Install the project (pinned versions) and run the default test tiers: pytest, then lit.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet -e '.[dev]'
python3 -m pytest -q -p no:cacheprovider "$@"
lit -v lit_tests
