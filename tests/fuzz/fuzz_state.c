/*
 * libFuzzer target for the state JSON parsers (state/state.c): the whole
 * state (file backend), a record (jobs/NAME.json), stack.json and a lock.
 * Whatever parses must print and parse again to the same bytes.
 *
 *	clang -fsanitize=fuzzer,address,undefined -I. tests/fuzz/fuzz_state.c \
 *	      state/state.c util/buf.c util/err.c util/ctx.c -lcjson -lm
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "state/state.h"
#include "util/err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct vx_err err = VX_ERR_INIT;
	struct state st = STATE_INIT, again = STATE_INIT;
	struct state_record r;
	struct state_lock l;
	char *a = NULL, *b = NULL;

	if (state_from_json(&st, text, size, &err) == 0 && state_to_json(&st, &a, &err) == 0) {
		if (state_from_json(&again, a, strlen(a), &err) != 0 ||
		    state_to_json(&again, &b, &err) != 0 || strcmp(a, b) != 0)
			abort();
	}
	state_release(&st);
	state_release(&again);
	free(a);
	free(b);
	a = b = NULL;
	if (state_header_from_json(&st, text, size, &err) == 0 &&
	    state_header_to_json(&st, &a, &err) != 0)
		abort();
	state_release(&st);
	free(a);
	a = NULL;
	if (state_record_from_json(&r, text, size, &err) == 0) {
		if (state_record_to_json(&r, &a, &err) != 0)
			abort();
		state_record_release(&r);
	}
	free(a);
	a = NULL;
	if (state_lock_from_json(&l, text, size, &err) == 0) {
		if (state_lock_to_json(&l, &a, &err) != 0)
			abort();
		state_lock_release(&l);
	}
	free(a);
	vx_err_release(&err);
	return 0;
}
