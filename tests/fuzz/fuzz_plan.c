/* libFuzzer target: the saved-plan parser (vxapply PLANFILE reads a file anyone may have edited). */
#include <stddef.h>
#include <stdint.h>

#include "reconcile/out/render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct saved_plan sp;
	struct vx_err err = VX_ERR_INIT;

	if (saved_plan_parse(&sp, (const char *)data, size, &err) == 0)
		saved_plan_release(&sp);
	vx_err_release(&err);
	return 0;
}
