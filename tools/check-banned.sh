#!/bin/sh
# Fails when C sources call a banned function (see util/banned.h), when a product .c file
# does not include util/banned.h as its last include (so the compiler refuses those calls
# too, and no system header after it meets the macros), or on exit() outside cmd/.
cd "$(dirname "$0")/.." || exit 1
rc=0
hits=$(grep -nHE '\b(strcpy|strcat|strncpy|strncat|strtok|sprintf|vsprintf|atoi|atol|gets)[[:space:]]*\(' \
	$(git ls-files '*.c' '*.h' 2>/dev/null || find . -name '*.[ch]') | grep -v '^util/banned.h' | grep -vE '(snprintf|vsnprintf)\(' )
if [ -n "$hits" ]; then echo "banned functions used:"; echo "$hits"; rc=1; fi
hits=$(grep -nE '(^|[^_a-z])(exit|_exit|abort)[[:space:]]*\(' $(git ls-files 'util/*.c' 'reconcile/*.c' 'providers/*.c' 'providers/*/*.c' 'state/*.c' 'workflow/*.c' 2>/dev/null) /dev/null | grep -v '/\*' )
if [ -n "$hits" ]; then echo "exit()/abort() outside cmd/:"; echo "$hits"; rc=1; fi
missing=""
for f in $(git ls-files 'util/*.c' 'reconcile/*.c' 'providers/*.c' 'providers/*/*.c' 'state/*.c' 'workflow/*.c' \
	'cmd/*.c' 2>/dev/null); do
	last=$(grep -E '^[[:space:]]*#[[:space:]]*include[[:space:]]' "$f" | tail -n 1)
	[ "$last" = '#include "util/banned.h"' ] || missing="$missing
$f"
done
if [ -n "$missing" ]; then
	echo "product .c files whose last #include is not \"util/banned.h\":$missing"; rc=1
fi
exit $rc
