/*
 * libFuzzer target for the response parsers of the Google API clients
 * (providers/gcp/vertex.c, compute.c, quotas.c, storage.c): any bytes must
 * parse or be refused with VX_EINVAL, without a crash, a leak or a sanitizer
 * report, and what parses must hold together (every label has a key and a
 * value, counts match arrays). The first byte picks the parser; the rest is
 * the response body, given without a terminating NUL.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "providers/gcp/compute.h"
#include "providers/gcp/quotas.h"
#include "providers/gcp/storage.h"
#include "providers/gcp/vertex.h"
#include "util/err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

static void check_job(const struct vertex_job *j)
{
	size_t i;

	check(j->n_labels == 0 || j->labels != NULL);
	for (i = 0; i < j->n_labels; i++)
		check(j->labels[i].key && j->labels[i].value);
	check(vertex_job_state_name(j->state) != NULL);
	check(!(vertex_job_state_is_active(j->state) && vertex_job_state_is_terminal(j->state)));
}

static void check_rc(int rc)
{
	check(rc == 0 || rc == VX_EINVAL || rc == VX_ENOMEM);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vx_err err = VX_ERR_INIT;
	const char *body;
	char *tok = NULL, *copy;
	size_t i;
	int rc;

	if (size < 1)
		return 0;
	body = (const char *)data + 1;
	size--;
	switch (data[0] % 11) {
	case 0: {
		struct vertex_job j = VERTEX_JOB_INIT;

		rc = vertex_job_parse_json(body, size, &j, &err);
		check_rc(rc);
		if (rc == 0)
			check_job(&j);
		vertex_job_release(&j);
		break;
	}
	case 1: {
		struct vertex_job_list l = VERTEX_JOB_LIST_INIT;

		rc = vertex_list_parse_json(body, size, &l, &tok, &err);
		check_rc(rc);
		for (i = 0; i < l.n; i++)
			check_job(&l.items[i]);
		check(!tok || tok[0]);
		vertex_job_list_release(&l);
		break;
	}
	case 2: {
		struct vertex_operation op = VERTEX_OPERATION_INIT;

		check_rc(vertex_operation_parse_json(body, size, &op, &err));
		check(!op.error_code || op.done);
		vertex_operation_release(&op);
		break;
	}
	case 3: {
		/* The text helpers take NUL-terminated strings. */
		int64_t t;

		copy = malloc(size + 1);
		if (!copy)
			return 0;
		memcpy(copy, body, size);
		copy[size] = '\0';
		(void)vertex_time_parse(copy, &t);
		(void)vertex_job_state_parse(copy);
		{
			struct vx_label l = { copy, copy };
			char *f = NULL;

			if (vertex_filter_labels(&f, &l, 1, &err) == 0)
				check(f && !strncmp(f, "labels.", 7));
			free(f);
		}
		free(copy);
		break;
	}
	case 4: {
		struct compute_reservation r = COMPUTE_RESERVATION_INIT;

		check_rc(compute_reservation_parse_json(body, size, &r, &err));
		check(r.n_accelerators == 0 || r.accelerators != NULL);
		if (r.name) {
			char *json = NULL;

			check(compute_reservation_to_json(&r, &json) == 0);
			free(json);
		}
		compute_reservation_release(&r);
		break;
	}
	case 5:
	case 6: {
		struct compute_reservation_list l = COMPUTE_RESERVATION_LIST_INIT;

		if (data[0] % 11 == 5)
			rc = compute_reservation_list_parse_json(body, size, &l, &tok, &err);
		else
			rc = compute_reservation_aggregated_parse_json(body, size, &l, &tok, &err);
		check_rc(rc);
		check(l.n <= l.alloc);
		compute_reservation_list_release(&l);
		break;
	}
	case 7: {
		struct compute_operation op = COMPUTE_OPERATION_INIT;

		check_rc(compute_operation_parse_json(body, size, &op, &err));
		compute_operation_release(&op);
		break;
	}
	case 8: {
		struct quota_preference p = QUOTA_PREFERENCE_INIT;
		struct quota_preference_list l = QUOTA_PREFERENCE_LIST_INIT;

		check_rc(quota_preference_parse_json(body, size, &p, &err));
		if (p.quota_id) {
			char *json = NULL;

			check(quota_preference_to_json(&p, &json) == 0);
			free(json);
		}
		quota_preference_release(&p);
		check_rc(quota_preference_list_parse_json(body, size, &l, &tok, &err));
		quota_preference_list_release(&l);
		break;
	}
	case 9: {
		struct quota_info q = QUOTA_INFO_INIT;
		struct quota_info_list l = QUOTA_INFO_LIST_INIT;
		int64_t v;

		check_rc(quota_info_parse_json(body, size, &q, &err));
		(void)quota_info_limit_for(&q, "us-central1", &v);
		quota_info_release(&q);
		check_rc(quota_info_list_parse_json(body, size, &l, &tok, &err));
		quota_info_list_release(&l);
		break;
	}
	default: {
		struct storage_object o = STORAGE_OBJECT_INIT;

		rc = storage_object_parse_json(body, size, &o, &err);
		check_rc(rc);
		check(rc < 0 || o.generation > 0);
		storage_object_release(&o);
		break;
	}
	}
	free(tok);
	vx_err_release(&err);
	return 0;
}
