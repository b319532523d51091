#ifndef VX_RECONCILE_KIND_QUOTA_H
#define VX_RECONCILE_KIND_QUOTA_H

/*
 * The quota preference kind's declarations (QuotaPreference documents,
 * quota.NAME) and their accessors, for the kind's files and the code that
 * truly works on quota preferences. They live in the kind's slot of
 * struct stack.
 */

#include <stddef.h>
#include <stdint.h>

#include "reconcile/stack.h"

struct stack_quota {
	struct stack_decl d;		/* address "quota.NAME"; NAME is the quotaPreferenceId */
	char *service;			/* "aiplatform.googleapis.com" */
	char *quota_id;			/* "CustomModelTrainingH100GPUsPerProjectPerRegion" */
	struct stack_labels dimensions; /* {"region": "us-central1"}; may be empty */
	int64_t preferred_value;	/* >= -1 (-1 = unlimited) */
	char *contact_email;		/* or NULL */
	char *justification;		/* or NULL */
	int ignore_safety_checks;	/* 1: a decrease past Google's safety checks is meant */
};

/* st's quota preferences in declaration order, *n of them (n may be NULL). Borrowed. */
const struct stack_quota *stack_quotas(const struct stack *st, size_t *n);
/* The quota preference named name; NULL when not declared. */
const struct stack_quota *stack_find_quota(const struct stack *st, const char *name);

/* kind_quota_load.c: the row's loader slots (struct kind), for kind_quota.c's row. */
struct load_pass;
struct ynode;
int kind_quota_load_alloc(struct load_pass *B, size_t n);
int kind_quota_load_read(struct load_pass *B, const struct ynode *doc);
int kind_quota_decl_hash(struct stack *st);
void kind_quota_decl_release(struct stack_kind_decls *slot);

/* The kind's row of kind_table (reconcile/kind.h). */
extern const struct kind kind_quota;

#endif
