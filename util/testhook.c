/* The test pause points: see util/testhook.h. */
#include "util/testhook.h"

#include <signal.h>
#include <string.h>

#include "util/ctx.h"
#include "util/banned.h"

int vx_test_hook_armed(const struct vx_ctx *ctx, const char *point)
{
	const char *v = vx_getenv(ctx, "VX_TEST_PAUSE");

	return v && !strcmp(v, point);
}

int vx_test_hook(const struct vx_ctx *ctx, const char *point)
{
	if (!vx_test_hook_armed(ctx, point))
		return 0;
	raise(SIGSTOP);
	return 1;
}
