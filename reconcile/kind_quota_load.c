/*
 * The quota preference kind's declarations: its QuotaPreference documents
 * read into its slot of struct stack (the row's load_* slots), their
 * canonical hashes, release and lookups.
 */
#include "reconcile/kind_quota.h"
#include "reconcile/stack_loader.h"
#include "reconcile/kind.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/load/ynode.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/banned.h"

static const char *const quota_keys[] = { "kind", "name", "service", "quotaId", "dimensions",
					  "preferredValue", "contactEmail", "justification",
					  "ignoreSafetyChecks" };

static void quota_release(struct stack_quota *q)
{
	stack_decl_release(&q->d);
	free(q->service);
	free(q->quota_id);
	stack_labels_release(&q->dimensions);
	free(q->contact_email);
	free(q->justification);
}

static int read_quota(struct stack_quota *q, struct loader *L, const struct ynode *doc,
		      struct seen *seen, size_t *nseen)
{
	const struct ynode *v;
	const char *name, *s;
	int64_t x;

	name = stack_read_name(L, doc, &kind_quota);
	stack_check_keys(L, doc, "", quota_keys, ARRAY_SIZE(quota_keys));
	if (name && stack_check_unique(L, seen, nseen, name, doc) &&
	    stack_decl_init(&q->d, L, "quota", name, doc) < 0)
		return -1;
	if (stack_get_str(&s, &v, L, doc, "", "service", 1)) {
		size_t n = strlen(s), suf = strlen(".googleapis.com");

		if (n <= suf || strcmp(s + n - suf, ".googleapis.com"))
			stack_err(L, v, "service: \"%s\" is not a service name (like "
					"\"aiplatform.googleapis.com\")",
				  s);
		else
			q->service = stack_dup_opt(L, s);
	}
	if (stack_get_str(&s, &v, L, doc, "", "quotaId", 1)) {
		if (!stack_names_quota_id_valid(s))
			stack_err(L, v, "quotaId: \"%s\" is not a quota ID (like "
					"\"CustomModelTrainingH100GPUsPerProjectPerRegion\")",
				  s);
		else
			q->quota_id = stack_dup_opt(L, s);
	}
	stack_get_string_map(&q->dimensions, L, doc, "dimensions", 0);
	if (stack_get_int(&x, &v, L, doc, "", "preferredValue", 1)) {
		if (x < -1)
			stack_err(L, v, "preferredValue: must be -1 (unlimited) or more, got %lld",
				  (long long)x);
		else
			q->preferred_value = x;
	}
	if (stack_get_str(&s, &v, L, doc, "", "contactEmail", 0)) {
		if (!stack_names_email_valid(s))
			stack_err(L, v, "contactEmail: \"%s\" is not an email address", s);
		else
			q->contact_email = stack_dup_opt(L, s);
	}
	if (stack_get_str(&s, &v, L, doc, "", "justification", 0))
		q->justification = stack_dup_opt(L, s);
	(void)stack_get_bool(&q->ignore_safety_checks, L, doc, "", "ignoreSafetyChecks");
	return 0;
}

/* Google keeps one preference per service, quota and dimensions. */
static int dims_equal(const struct stack_labels *a, const struct stack_labels *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->items[i].key, b->items[i].key) ||
		    strcmp(a->items[i].value, b->items[i].value))
			return 0;
	return 1;
}

/* ---------------------------------------------------------------------- */
/* The row's loader slots and the accessors */

static size_t slot_index(void)
{
	return kind_index(&kind_quota);
}

const struct stack_quota *stack_quotas(const struct stack *st, size_t *n)
{
	const struct stack_kind_decls *s = &st->of[slot_index()];

	if (n)
		*n = s->n;
	return s->items;
}

const struct stack_quota *stack_find_quota(const struct stack *st, const char *name)
{
	return (const struct stack_quota *)stack_find_in(st, &kind_quota, name);
}

int kind_quota_load_alloc(struct load_pass *B, size_t n)
{
	struct stack_kind_decls *s = &B->st->of[slot_index()];

	s->items = calloc(n + 1, sizeof(struct stack_quota));
	return s->items ? 0 : -1;
}

/* A quota preference, which must not set the same quota and dimensions as an earlier one. */
int kind_quota_load_read(struct load_pass *B, const struct ynode *doc)
{
	struct stack_kind_decls *slot = &B->st->of[slot_index()];
	struct stack_quota *all = slot->items, *q = &all[slot->n++];

	if (read_quota(q, B->L, doc, B->seen, &B->nseen) < 0)
		return -1;
	for (size_t k = 0; q->service && q->quota_id && k + 1 < slot->n; k++) {
		const struct stack_quota *o = &all[k];

		if (o->service && o->quota_id && !strcmp(o->service, q->service) &&
		    !strcmp(o->quota_id, q->quota_id) && dims_equal(&o->dimensions, &q->dimensions))
			stack_err(B->L, doc, "the same quota and dimensions as "
					     "QuotaPreference \"%s\" at %s:%u:%u (Cloud Quotas keeps one "
					     "preference per quota and dimensions)",
				  o->d.name ? o->d.name : "",
				  o->d.file ? o->d.file : "", o->d.line, o->d.col);
	}
	return 0;
}

void kind_quota_decl_release(struct stack_kind_decls *slot)
{
	struct stack_quota *q = slot->items;

	for (size_t i = 0; i < slot->n; i++)
		quota_release(&q[i]);
	free(slot->items);
}

static int hash_quota(struct vx_buf *b, struct stack_quota *q)
{
	int rc = vx_buf_adds(b, "{\"address\":");

	if (rc == 0)
		rc = vx_buf_add_json_str(b, q->d.address);
	if (rc == 0)
		rc = stack_json_kv(b, "contactEmail", q->contact_email);
	if (rc == 0)
		rc = stack_json_map(b, "dimensions", &q->dimensions);
	if (rc == 0)
		rc = stack_json_kv(b, "justification", q->justification);
	if (rc == 0)
		rc = vx_buf_printf(b, ",\"preferredValue\":\"%lld\"", (long long)q->preferred_value);
	if (rc == 0)
		rc = stack_json_kv(b, "quotaId", q->quota_id);
	if (rc == 0)
		rc = stack_json_kv(b, "service", q->service);
	if (rc == 0 && q->ignore_safety_checks)
		rc = vx_buf_adds(b, ",\"ignoreSafetyChecks\":true");
	return rc ? rc : stack_decl_hash(b, &q->d);
}

int kind_quota_decl_hash(struct stack *st)
{
	struct stack_kind_decls *slot = &st->of[slot_index()];
	struct vx_buf b = VX_BUF_INIT;
	int rc = 0;

	for (size_t i = 0; i < slot->n && rc == 0; i++)
		rc = hash_quota(&b, (struct stack_quota *)slot->items + i);
	vx_buf_release(&b);
	return rc;
}
