/*
 * libFuzzer target for the Cloud Quotas reply parsers (providers/gcp/quotas.c):
 * a QuotaPreference, a page of them, a QuotaInfo and a page of those. Every
 * input goes to all four (fuzz_vertex.c reaches them behind a selector byte
 * shared with the other APIs). What parses must hold together: every dimension
 * has a key and a value, counts match arrays, a next page token is never
 * empty, a preference prints again.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "providers/gcp/quotas.h"
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

static void check_preference(const struct quota_preference *p)
{
	size_t i;

	check(p->n_dimensions == 0 || p->dimensions != NULL);
	for (i = 0; i < p->n_dimensions; i++)
		check(p->dimensions[i].key && p->dimensions[i].value);
	if (p->n_dimensions)
		(void)quota_preference_dimension(p, p->dimensions[0].key);
}

static void check_info(const struct quota_info *q)
{
	size_t i, j;
	int64_t v;

	check(q->n_dimensions == 0 || q->dimensions != NULL);
	check(q->n_infos == 0 || q->infos != NULL);
	for (i = 0; i < q->n_infos; i++) {
		const struct quota_dimensions_info *d = &q->infos[i];

		check(d->n_dimensions == 0 || d->dimensions != NULL);
		for (j = 0; j < d->n_dimensions; j++)
			check(d->dimensions[j].key && d->dimensions[j].value);
		for (j = 0; j < d->n_applicable_locations; j++)
			check(d->applicable_locations[j] != NULL);
	}
	(void)quota_info_limit_for(q, "us-central1", &v);
	(void)quota_info_limit_for(q, "us-central1-a", &v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *body = (const char *)data;
	struct vx_err err = VX_ERR_INIT;
	struct quota_preference p = QUOTA_PREFERENCE_INIT;
	struct quota_preference_list pl = QUOTA_PREFERENCE_LIST_INIT;
	struct quota_info q = QUOTA_INFO_INIT;
	struct quota_info_list ql = QUOTA_INFO_LIST_INIT;
	char *tok = NULL, *json = NULL;
	size_t i;
	int rc;

	rc = quota_preference_parse_json(body, size, &p, &err);
	check_rc(rc);
	if (rc == 0) {
		check_preference(&p);
		if (p.quota_id) {
			check(quota_preference_to_json(&p, &json) == 0);
			free(json);
		}
	}
	quota_preference_release(&p);

	rc = quota_preference_list_parse_json(body, size, &pl, &tok, &err);
	check_rc(rc);
	check(pl.n <= pl.alloc);
	for (i = 0; i < pl.n; i++)
		check_preference(&pl.items[i]);
	check(!tok || tok[0]);
	quota_preference_list_release(&pl);
	free(tok);
	tok = NULL;

	rc = quota_info_parse_json(body, size, &q, &err);
	check_rc(rc);
	if (rc == 0)
		check_info(&q);
	quota_info_release(&q);

	rc = quota_info_list_parse_json(body, size, &ql, &tok, &err);
	check_rc(rc);
	check(ql.n <= ql.alloc);
	for (i = 0; i < ql.n; i++)
		check_info(&ql.items[i]);
	check(!tok || tok[0]);
	quota_info_list_release(&ql);
	free(tok);
	vx_err_release(&err);
	return 0;
}
