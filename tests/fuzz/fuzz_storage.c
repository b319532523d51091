/*
 * libFuzzer target for Cloud Storage object metadata (storage_object_parse_json
 * in providers/gcp/storage.c), what the gcs state backend reads before it
 * trusts a generation for its compare-and-swap writes. The objects' contents
 * (state, records, the lease) go through the state JSON codec, which
 * fuzz_state.c covers. A parsed object has a positive generation (the
 * precondition vx sends back).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "providers/gcp/storage.h"
#include "util/err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vx_err err = VX_ERR_INIT;
	struct storage_object o = STORAGE_OBJECT_INIT;
	int rc;

	rc = storage_object_parse_json((const char *)data, size, &o, &err);
	if (rc != 0 && rc != VX_EINVAL && rc != VX_ENOMEM)
		abort();
	if (rc == 0 && o.generation <= 0)
		abort();
	storage_object_release(&o);
	vx_err_release(&err);
	return 0;
}
