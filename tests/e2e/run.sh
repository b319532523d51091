#!/bin/sh
# End-to-end tests: the built binary ($VX_BIN) against the fake Google Cloud.
set -e
cd "$(dirname "$0")"
: "${VX_BIN:?VX_BIN must name the vx binary}"
export VX_BIN
exec python3 ../run_unittest.py "${VX_E2E_NAME:-e2e}" . "${VX_E2E_PATTERN:-test_*.py}"
