#!/bin/sh
# End-to-end tests: the built binary ($VX_BIN) against the fake Google Cloud.
set -e
cd "$(dirname "$0")"
: "${VX_BIN:?VX_BIN must name the vx binary}"
export VX_BIN
exec python3 -m unittest discover -s . -p 'test_*.py' "$@"
