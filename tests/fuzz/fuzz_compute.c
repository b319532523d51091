/*
 * libFuzzer target for the Compute Engine reply parsers (providers/gcp/compute.c):
 * a reservation, a zone's reservation list, an aggregated list and a zone
 * operation. fuzz_vertex.c reaches them too, behind a selector byte shared with
 * the other APIs; here every input goes to all four, so the corpus
 * (tests/fuzz/corpus/fuzz_compute/) grows for Compute alone. Whatever parses
 * must hold together: names that pass the checks vx relies on before it puts
 * them in a URL, counts that match arrays, a reservation that prints again.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "providers/gcp/compute.h"
#include "util/err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

static void check_rc(int rc)
{
	check(rc == 0 || rc == VX_EINVAL || rc == VX_ENOMEM);
}

static void check_reservation(const struct compute_reservation *r)
{
	size_t i;

	check(r->n_accelerators == 0 || r->accelerators != NULL);
	for (i = 0; i < r->n_accelerators; i++)
		check(r->accelerators[i].type != NULL);
	/* The checks must never accept a name with a byte a URL path or a header
	 * could be bent by. */
	if (r->name && compute_reservation_name_ok(r->name))
		check(strcspn(r->name, "/?#%\r\n \\") == strlen(r->name));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *body = (const char *)data;
	struct vx_err err = VX_ERR_INIT;
	struct compute_reservation r = COMPUTE_RESERVATION_INIT;
	struct compute_reservation_list l = COMPUTE_RESERVATION_LIST_INIT;
	struct compute_operation op = COMPUTE_OPERATION_INIT;
	char *tok = NULL, *json = NULL;
	size_t i;
	int rc;

	rc = compute_reservation_parse_json(body, size, &r, &err);
	check_rc(rc);
	if (rc == 0) {
		check_reservation(&r);
		if (r.name) {
			check(compute_reservation_to_json(&r, &json) == 0);
			free(json);
		}
	}
	compute_reservation_release(&r);

	rc = compute_reservation_list_parse_json(body, size, &l, &tok, &err);
	check_rc(rc);
	check(l.n <= l.alloc);
	for (i = 0; i < l.n; i++)
		check_reservation(&l.items[i]);
	check(!tok || tok[0]);
	compute_reservation_list_release(&l);
	free(tok);
	tok = NULL;

	rc = compute_reservation_aggregated_parse_json(body, size, &l, &tok, &err);
	check_rc(rc);
	check(l.n <= l.alloc);
	compute_reservation_list_release(&l);
	free(tok);

	rc = compute_operation_parse_json(body, size, &op, &err);
	check_rc(rc);
	check(op.n_errors == 0 || op.errors != NULL);
	if (rc == 0 && op.name && compute_operation_name_ok(op.name))
		check(strcspn(op.name, "/?#%\r\n \\") == strlen(op.name));
	(void)compute_operation_done(&op);
	compute_operation_release(&op);
	vx_err_release(&err);
	return 0;
}
