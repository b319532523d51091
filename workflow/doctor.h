#ifndef VX_WORKFLOW_DOCTOR_H
#define VX_WORKFLOW_DOCTOR_H

/*
 * vx doctor's checks of what a stack needs: which of the permissions of the
 * table (providers/gcp/permissions.h) for the stack's kinds and state
 * backend the caller holds, asked with one testIamPermissions call per
 * project, one on the state bucket and one per job service account; and
 * which of the APIs it calls are disabled (Service Usage). Nothing is
 * changed. The result is lines for cmd/doctor.c to print.
 */

#include <stddef.h>

#include "util/err.h"

struct iamtest_client;
struct stack;

enum doctor_status {
	DOCTOR_OK,
	DOCTOR_FAIL,    /* something the stack needs is missing, or a check failed */
};

struct doctor_line {
	char *name;         /* "apis", "iam" */
	enum doctor_status status;
	char *text;         /* one line */
	char **more;        /* lines under it: what is missing and how to grant or enable it */
	size_t nmore;
};

struct doctor_report {
	struct doctor_line *lines;
	size_t n;
	int failed;         /* 1 when a line is DOCTOR_FAIL */
};

#define DOCTOR_REPORT_INIT { NULL, 0, 0 }

struct doctor_opts {
	int plan_only;      /* only what vx plan needs; else plan, apply, watch and import */
};

/*
 * Runs the checks for st (NULL: a stack of every kind on the git backend)
 * in project. A check Google refuses or that fails becomes a DOCTOR_FAIL
 * line saying why. Returns 0, or VX_ENOMEM with err set.
 */
int doctor_check(struct doctor_report *out, const struct iamtest_client *c, const struct stack *st,
		 const char *project, const struct doctor_opts *o, struct vx_err *err) VX_WUR;

void doctor_report_release(struct doctor_report *r);

#endif
