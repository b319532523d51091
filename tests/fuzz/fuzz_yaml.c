/*
 * libFuzzer target for the YAML loader (reconcile/load/ynode.c): any bytes must
 * load or be refused with diagnostics, without a crash, a leak or a
 * sanitizer report. The tree that loads is walked (without recursion) and
 * every lookup helper is called on it, so a malformed node would show.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/load/ynode.h"
#include "util/diag.h"
#include "util/err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Small limits keep each run fast; the defaults are exercised by the unit tests. */
static const struct ynode_limits fuzz_limits = { 1u << 20, 64, 20000 };

static void walk(const struct ynode *root)
{
	const struct ynode *stack[256];
	size_t n = 0, visits = 0, i;

	if (!root)
		return;
	stack[n++] = root;
	while (n && visits++ < 50000) {
		const struct ynode *x = stack[--n];

		if (!x->file || !x->line || !x->col)
			abort();
		(void)ynode_type_name(x);
		(void)ynode_is_null(x);
		if (x->kind == YNODE_SCALAR) {
			if (!x->str || strlen(x->str) != x->len)
				abort();
			continue;
		}
		if (x->kind == YNODE_MAP) {
			for (i = 0; i < x->n; i++) {
				const struct ynode *k = x->pairs[i].key;

				if (k->kind != YNODE_SCALAR || ynode_get(x, k->str) == NULL)
					abort();
				if (n < sizeof(stack) / sizeof(stack[0]))
					stack[n++] = x->pairs[i].value;
			}
		} else {
			for (i = 0; i < x->n; i++) {
				if (n < sizeof(stack) / sizeof(stack[0]))
					stack[n++] = x->items[i];
			}
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vx_diags diags = VX_DIAGS_INIT;
	struct vx_err err = VX_ERR_INIT;
	struct yfile *f = NULL;
	size_t i;

	if (ynode_load_mem(&f, "fuzz.yaml", (const char *)data, size, &fuzz_limits, &diags,
			  &err) == 0) {
		for (i = 0; i < f->ndocs; i++)
			walk(f->docs[i]);
		yfile_free(f);
	} else if (f || (!diags.n && !err.msg)) {
		abort(); /* a refusal must say why, and leave nothing behind */
	}
	for (i = 0; i < diags.n; i++)
		free(vx_diag_format(&diags.items[i]));
	vx_diags_release(&diags);
	vx_err_release(&err);
	return 0;
}
