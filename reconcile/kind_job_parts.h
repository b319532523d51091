#ifndef VX_RECONCILE_KIND_JOB_PARTS_H
#define VX_RECONCILE_KIND_JOB_PARTS_H

/*
 * The job kind's slots (struct kind, reconcile/kind.h) written in files of
 * their own beside reconcile/kind_job.c, declared here for kind_job's row.
 * Each has the contract its slot's comment in kind.h states.
 */

#include <stddef.h>

#include "util/err.h"

struct import_outcome;
struct import_request;
struct provider;
struct stack;
struct stack_decl;
struct state;
struct status_input;
struct status_report;

/* The import slot: a Vertex AI CustomJob (reconcile/kind_job_import.c). */
int kind_job_import(struct import_outcome *out, struct state *state, struct provider *p,
		    const struct stack *st, const struct import_request *req, int check_only,
		    struct vx_err *err) VX_WUR;
/* The decl_at slot: the stack's jobs in declaration order (reconcile/kind_job_import.c). */
const struct stack_decl *kind_job_decl_at(const struct stack *st, size_t i);

/* The status_rows slot: declared, recorded and untracked jobs (reconcile/kind_job_status.c). */
int kind_job_status_rows(struct status_report *out, const struct status_input *in);

#endif
