/*
 * libFuzzer target: the whole stack loader (YAML, kinds, the CustomJobSpec
 * schema and machine checks, labels, reservations) on one hostile file next
 * to a valid Stack document.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "reconcile/stack.h"
#include "reconcile/load/ynode.h"
#include "util/diag.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char stack_doc[] = "kind: Stack\nname: fuzz\nproject: fuzz-project\nregion: us-central1\n";
	struct stack_source files[2] = {
		{ "a.yaml", stack_doc, sizeof(stack_doc) - 1 },
		{ "b.yaml", (const char *)data, size },
	};
	struct ynode_limits limits = { 1u << 20, 64, 20000 };
	struct vx_diags diags = VX_DIAGS_INIT;
	struct vx_err err = VX_ERR_INIT;
	struct stack *st = NULL;

	if (stack_load_mem(&st, ".", files, 2, &limits, &diags, &err) == 0) {
		for (size_t i = 0; i < st->njobs; i++) {
			char *shape = job_spec_shape(&st->jobs[i].spec);

			free(shape);
		}
	}
	stack_free(st);
	vx_diags_release(&diags);
	vx_err_release(&err);
	return 0;
}
