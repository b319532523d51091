#!/bin/sh
# Runs each cmocka unit-test binary given and prints one closing count line.
passed=0; failed=0
for t in "$@"; do
	if "$t"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $t"; fi
done
echo "unit: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
