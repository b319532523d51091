/*
 * Every unit test runs with cJSON's allocator hooks as vx does (main()
 * installs them first thing): a cJSON scratch (util/json.h) then takes
 * effect in the tests too, so ASan sees its trees as the binary makes them.
 */
#include "util/json.h"

static void __attribute__((constructor)) install_hooks(void)
{
	vx_json_hooks_install();
}
