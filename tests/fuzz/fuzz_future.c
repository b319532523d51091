/*
 * libFuzzer target for the Compute future-reservation reply parsers
 * (providers/gcp/future.c): one future reservation, a zone's list and an
 * aggregated list. Whatever parses must hold together: counts that match
 * arrays, an auto-created reservation's name that passes Compute's name
 * check before it can reach a URL, and a parsed request that prints again
 * or is refused as the header says.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "providers/gcp/compute.h"
#include "providers/gcp/future.h"
#include "util/err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

static void check_fr(const struct future_reservation *fr)
{
	size_t i;

	check(fr->n_accelerators == 0 || fr->accelerators != NULL);
	check(fr->n_auto_created == 0 || fr->auto_created != NULL);
	for (i = 0; i < fr->n_auto_created; i++) {
		const char *name = future_reservation_auto_created_name(fr, i);

		check(fr->auto_created[i] != NULL);
		if (name)
			check(compute_reservation_name_ok(name) && strcspn(name, "/?#%\r\n \\") == strlen(name));
	}
	check(future_reservation_auto_created_name(fr, fr->n_auto_created) == NULL);
	check(fr->specific_reservation_required >= FUTURE_UNSET && fr->specific_reservation_required <= 1);
	check(fr->auto_delete_auto_created_reservations >= FUTURE_UNSET &&
	      fr->auto_delete_auto_created_reservations <= 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *body = (const char *)data;
	struct vx_err err = VX_ERR_INIT;
	struct future_reservation fr = FUTURE_RESERVATION_INIT;
	struct future_reservation_list l = FUTURE_RESERVATION_LIST_INIT;
	char *tok = NULL, *json = NULL;
	size_t i;
	int rc;

	rc = future_reservation_parse_json(body, size, &fr, &err);
	check(rc == 0 || rc == VX_EINVAL || rc == VX_ENOMEM);
	if (rc == 0) {
		check_fr(&fr);
		rc = future_reservation_to_json(&fr, &json, &err);
		check(rc == 0 || rc == VX_EINVAL || rc == VX_ENOMEM);
		check((rc == 0) == (json != NULL));
		free(json);
	}
	future_reservation_release(&fr);

	rc = future_reservation_list_parse_json(body, size, &l, &tok, &err);
	check(rc == 0 || rc == VX_EINVAL || rc == VX_ENOMEM);
	check(l.n <= l.alloc);
	for (i = 0; i < l.n; i++)
		check_fr(&l.items[i]);
	check(!tok || tok[0]);
	future_reservation_list_release(&l);
	free(tok);
	tok = NULL;

	rc = future_reservation_aggregated_parse_json(body, size, &l, &tok, &err);
	check(rc == 0 || rc == VX_EINVAL || rc == VX_ERETRY || rc == VX_ENOMEM);
	check(l.n <= l.alloc);
	for (i = 0; i < l.n; i++)
		check_fr(&l.items[i]);
	future_reservation_list_release(&l);
	free(tok);
	vx_err_release(&err);
	return 0;
}
