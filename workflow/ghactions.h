#ifndef VX_WORKFLOW_GHACTIONS_H
#define VX_WORKFLOW_GHACTIONS_H

/*
 * GitHub Actions' own channels, written by vx itself (no wrapper around the
 * binary, so its stdout stays what it is elsewhere and $(...) and pipes
 * work): when GITHUB_ACTIONS is "true",
 *
 *   - the plan's markdown (and apply's result) is appended to the file named
 *     by $GITHUB_STEP_SUMMARY, the job's summary page;
 *   - the plan's results go to the file named by $GITHUB_OUTPUT as step
 *     outputs (changes, exitcode, cost_per_hour), in the NAME<<DELIMITER
 *     form GitHub documents for values of any kind, with a random delimiter
 *     (as GitHub's own toolkit writes them), and every value checked first
 *     so that none can end the block or add an output;
 *   - validation diagnostics become "::error file=F,line=L,col=C::MESSAGE"
 *     workflow commands, which GitHub shows as annotations on the pull
 *     request's diff: the message escaped as GitHub's toolkit escapes data
 *     (% CR LF), the properties as it escapes properties (also : and ,).
 *
 * Nothing here reads a secret: the summary is the plan's markdown, which is
 * what -format markdown prints (sensitive values are never in a plan), and
 * the outputs are numbers. A file that cannot be written is the caller's
 * warning, never a failed plan.
 */

#include <stddef.h>

#include "util/err.h"

struct apply_result;
struct planning;
struct vx_buf;
struct vx_ctx;
struct vx_diags;

/* The longest output name and value gha_outputs_write accepts. */
#define GHA_NAME_MAX 64
#define GHA_VALUE_MAX 128

/*
 * Every variable below is read from ctx's environment (vx_getenv; ctx NULL:
 * the process's), which cmd/ passes in.
 */

/* Whether vx runs as a GitHub Actions step ($GITHUB_ACTIONS is "true"). */
int gha_active(const struct vx_ctx *ctx);

/*
 * Appends s to out escaped as a workflow command's message (prop 0: %, CR and
 * LF as %25, %0D, %0A) or as a property's value (prop 1: also : and , as %3A
 * and %2C). Other control characters become '?' (GitHub would show them as
 * they are). VX_ENOMEM.
 */
int gha_escape(struct vx_buf *out, const char *s, int prop) VX_WUR;

/*
 * Appends one "::error file=F,line=L,col=C::MESSAGE" line per diagnostic of d
 * to out (file, line and col left out where unknown), and one
 * "::error::... and N more" when d dropped some. VX_ENOMEM.
 */
int gha_annotations(struct vx_buf *out, const struct vx_diags *d) VX_WUR;

/*
 * Appends text to the file named by $GITHUB_STEP_SUMMARY; nothing when it
 * is unset or empty. VX_EIO "cannot append to the step summary FILE: why".
 */
int gha_summary_append(const struct vx_ctx *ctx, const char *text, struct vx_err *err) VX_WUR;

struct gha_output {
	const char *name;  /* [A-Za-z0-9_-], 1 to GHA_NAME_MAX characters */
	const char *value; /* printable ASCII, at most GHA_VALUE_MAX bytes; "" allowed */
};

/*
 * Appends the n outputs to the file named by $GITHUB_OUTPUT (nothing when
 * it is unset or empty), each as "NAME<<ghadelimiter_HEX\nVALUE\nghadelimiter_HEX\n".
 * VX_EINVAL naming the output when a name or value is not as above (then
 * nothing is written); VX_EIO when the random delimiter or the file fails.
 */
int gha_outputs_write(const struct vx_ctx *ctx, const struct gha_output *o, size_t n,
		      struct vx_err *err) VX_WUR;

/*
 * What vx plan does in GitHub Actions once it has planned (pl, NULL when it
 * failed before a plan) and knows its exit code: the plan's markdown to the
 * step summary, and changes, exitcode and cost_per_hour (the plan's change
 * in hourly spend, "12.34"; "" when a price is unknown or there is no plan)
 * to the step outputs. Each file that cannot be written is told to warn
 * (one sentence, no secrets). Returns 0, or VX_ENOMEM.
 */
int gha_plan_report(const struct vx_ctx *ctx, const struct planning *pl, int exitcode,
		    void (*warn)(void *ud, const char *msg), void *ud) VX_WUR;

/*
 * What vx apply adds to the step summary: the plan it carried out (pl) and
 * one line with its result (res, NULL when there was nothing to do), and
 * exitcode to the step outputs. Warnings and result as gha_plan_report.
 */
int gha_apply_report(const struct vx_ctx *ctx, const struct planning *pl, const struct apply_result *res,
		     int exitcode, void (*warn)(void *ud, const char *msg), void *ud) VX_WUR;

#endif
