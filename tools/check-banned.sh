#!/bin/sh
# Fails when C sources call a banned function (see util/banned.h) or exit() outside cmd/.
cd "$(dirname "$0")/.." || exit 1
rc=0
hits=$(grep -nE '\b(strcpy|strcat|strncpy|strncat|strtok|sprintf|vsprintf|atoi|atol|gets)[[:space:]]*\(' \
	$(git ls-files '*.c' '*.h' 2>/dev/null || find . -name '*.[ch]') | grep -v '^util/banned.h' | grep -vE '(snprintf|vsnprintf)\(' )
if [ -n "$hits" ]; then echo "banned functions used:"; echo "$hits"; rc=1; fi
hits=$(grep -nE '(^|[^_a-z])(exit|_exit|abort)[[:space:]]*\(' $(git ls-files 'util/*.c' 'reconcile/*.c' 'providers/*.c' 'providers/*/*.c' 'state/*.c' 'workflow/*.c' 2>/dev/null) /dev/null | grep -v '/\*' )
if [ -n "$hits" ]; then echo "exit()/abort() outside cmd/:"; echo "$hits"; rc=1; fi
exit $rc
