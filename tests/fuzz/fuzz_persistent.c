/*
 * libFuzzer target for the response parsers of providers/gcp/persistent.c:
 * any bytes must parse or be refused with VX_EINVAL, without a crash, a leak
 * or a sanitizer report, and what parses must hold together (labels have a
 * key and a value, pools match their count, an id only with a valid name).
 * The first byte picks the parser; the rest is the body, without a NUL.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "providers/gcp/persistent.h"
#include "util/err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

static void check_resource(const struct persistent_resource *r)
{
	size_t i;

	check(r->n_labels == 0 || r->labels != NULL);
	for (i = 0; i < r->n_labels; i++)
		check(r->labels[i].key && r->labels[i].value);
	check(r->n_pools == 0 || r->pools != NULL);
	for (i = 0; i < r->n_pools; i++)
		check(r->pools[i].replica_count >= 0 && r->pools[i].used_replica_count >= 0);
	check(!r->id || persistent_name_check(r->name, NULL, NULL));
	check(persistent_state_name(r->state) != NULL);
}

static void check_rc(int rc)
{
	check(rc == 0 || rc == VX_EINVAL || rc == VX_ENOMEM);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vx_err err = VX_ERR_INIT;
	const char *body;
	char *tok = NULL;
	size_t i;
	int rc;

	if (size < 1)
		return 0;
	body = (const char *)data + 1;
	size--;
	switch (data[0] % 3) {
	case 0: {
		struct persistent_resource r = PERSISTENT_RESOURCE_INIT;

		rc = persistent_resource_parse_json(body, size, &r, &err);
		check_rc(rc);
		if (rc == 0)
			check_resource(&r);
		persistent_resource_release(&r);
		break;
	}
	case 1: {
		struct persistent_list l = PERSISTENT_LIST_INIT;

		check_rc(persistent_list_parse_json(body, size, &l, &tok, &err));
		for (i = 0; i < l.n; i++)
			check_resource(&l.items[i]);
		check(!tok || tok[0]);
		persistent_list_release(&l);
		break;
	}
	default: {
		struct persistent_operation op = PERSISTENT_OPERATION_INIT;

		check_rc(persistent_operation_parse_json(body, size, &op, &err));
		check(!op.error_code || op.done);
		if (op.has_resource)
			check_resource(&op.resource);
		persistent_operation_release(&op);
		break;
	}
	}
	free(tok);
	vx_err_release(&err);
	return 0;
}
