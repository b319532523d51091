#ifndef VX_RECONCILE_RUNLABEL_H
#define VX_RECONCILE_RUNLABEL_H

/*
 * vx's own labels on the jobs it creates, built and matched in one place.
 * Together they identify a run without the state (DESIGN.md section 3):
 * vx-stack, vx-lineage (the state's identity), vx-job, vx-spec (12 hex
 * digits of the spec hash), vx-run, vx-attempt, vx-rung (the rung of its job's
 * fallback ladder, 0 without one). That is what lets a crash
 * between "create" and "write state" be resolved by listing.
 */

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"
#include "util/label.h"

#define RUNLABEL_N 7

/* One run's identity. */
struct run_id {
	const char *stack;
	const char *lineage;   /* the state's lineage (a UUID); the label keeps 12 hex digits */
	const char *job;       /* the job's name */
	const char *spec_hash; /* full hex; the label keeps 12 digits */
	int64_t run;
	int64_t attempt;
	int64_t rung;          /* 0: the declared job; k: resubmit.fallback[k - 1] */
};

/* Which labels runlabel_match compares. */
enum {
	RUNLABEL_STACK = 1 << 0,
	RUNLABEL_LINEAGE = 1 << 1,
	RUNLABEL_JOB = 1 << 2,
	RUNLABEL_SPEC = 1 << 3,
	RUNLABEL_RUN = 1 << 4,
	RUNLABEL_ATTEMPT = 1 << 5,
	RUNLABEL_RUNG = 1 << 6,
	RUNLABEL_ALL = (1 << 7) - 1,
};

/* The labels a run carries: extra (the job's merged labels, no vx- keys)
 * plus vx's own, sorted by key, into *out (free with vx_labels_free). */
int runlabel_build(struct vx_label **out, size_t *n, const struct run_id *id,
		   const struct vx_label *extra, size_t nextra) VX_WUR;

/* Whether have carries the same values as want for each label in which
 * (a label missing on either side never matches). */
int runlabel_match(const struct vx_label *have, size_t nhave, const struct vx_label *want,
		   size_t nwant, unsigned which);

#endif
