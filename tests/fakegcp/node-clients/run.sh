#!/bin/sh
# Runs Google's own Node client libraries (REST mode) against the fake: installs the pinned
# packages from package-lock.json (npm ci, ~15 s, needs the npm registry) and runs check.mjs,
# which starts ../fakegcp.py itself. Not part of `make check`. Exit status is check.mjs's.
set -eu
cd "$(dirname "$0")"
command -v node >/dev/null 2>&1 || { echo "run.sh: node (>= 18) is required" >&2; exit 2; }
command -v npm >/dev/null 2>&1 || { echo "run.sh: npm is required" >&2; exit 2; }
npm ci --no-audit --no-fund --loglevel=error
exec node check.mjs
