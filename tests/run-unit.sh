#!/bin/sh
# Runs each cmocka unit-test binary given and prints one closing count line.
# VX_UNIT_JOBS of them at once (default: one per CPU; each is one process that does
# not share files or ports with another). Each one's output is kept and printed
# whole, in the order given, so the log reads as if they had run one by one.
jobs=${VX_UNIT_JOBS:-$(nproc 2>/dev/null || echo 1)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vx-run-unit.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
i=0
for t in "$@"; do
	i=$((i + 1))
	printf '%s\n%s\n' "$i" "$t"
done | xargs -n 2 -P "$jobs" sh -c '"$2" >"$0/$1.out" 2>&1; echo $? >"$0/$1.rc"' "$tmp"
passed=0; failed=0; i=0
for t in "$@"; do
	i=$((i + 1))
	cat "$tmp/$i.out" 2>/dev/null
	if [ "$(cat "$tmp/$i.rc" 2>/dev/null)" = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $t"; fi
done
echo "unit: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
