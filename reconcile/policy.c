/* A job's applied policy: see reconcile/policy.h. */
#include "reconcile/policy.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/kind_job.h"
#include "reconcile/stack.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/digest.h"
#include "util/banned.h"

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The ladder's identity: each rung's region and spec hash, in order. */
static int ladder_hash(char **out, const struct stack_job *j)
{
	struct vx_buf b = VX_BUF_INIT;
	char hex[VX_SHA256_HEX_LEN + 1];
	int rc = 0;

	*out = NULL;
	if (!j->nrungs)
		return 0;
	for (size_t k = 1; k <= j->nrungs && rc == 0; k++)
		rc = vx_buf_printf(&b, "%s\n%s\n", stack_job_rung_region(j, (int64_t)k),
				   stack_job_rung_spec(j, (int64_t)k)->hash);
	if (rc == 0 && vx_digest_sha256_hex(hex, b.data, b.len) == 0)
		*out = vx_strdup(hex);
	vx_buf_release(&b);
	return *out ? 0 : VX_ENOMEM;
}

int policy_of_job(struct state_policy *out, const struct stack *st, const struct stack_job *j)
{
	size_t n = 0, nsw;
	const struct stack_sweep *sw = stack_sweeps(st, &nsw);

	memset(out, 0, sizeof(*out));
	out->max_attempts = j->max_attempts;
	out->delay_ms = j->resubmit_delay_ms;
	out->fallback_rungs = (int64_t)j->nrungs;
	memcpy(out->on_exit_codes, j->on_exit_codes, sizeof(out->on_exit_codes));
	out->within_ms = j->within_ms;
	out->return_after_ms = j->return_after_ms;
	out->max_queued_ms = j->max_queued_ms;
	if (j->sweep && j->sweep <= nsw) {
		out->max_parallel = sw[j->sweep - 1].max_parallel;
		out->max_failed = sw[j->sweep - 1].max_failed;
	}
	for (unsigned c = 0; c < STACK_FAIL_NCLASSES; c++)
		n += (j->resubmit_on >> c) & 1u;
	if ((n && !(out->resubmit_on = calloc(n, sizeof(char *)))) ||
	    (j->nafter && !(out->after = calloc(j->nafter, sizeof(char *)))))
		goto oom;
	if (n && j->on_budgets && !(out->resubmit_budgets = calloc(n, sizeof(int64_t))))
		goto oom;
	for (unsigned c = 0; c < STACK_FAIL_NCLASSES; c++)
		if (j->resubmit_on & (1u << c)) {
			if (!(out->resubmit_on[out->nresubmit_on] = vx_strdup(stack_fail_names[c])))
				goto oom;
			if (out->resubmit_budgets)
				out->resubmit_budgets[out->nresubmit_on] = j->on_budget[c];
			out->nresubmit_on++;
		}
	for (size_t i = 0; i < j->nafter; i++) {
		if (!(out->after[i] = vx_strdup(j->after[i])))
			goto oom;
		out->nafter++;
	}
	/* after: is a set: written in another order it is the same. */
	if (out->nafter > 1)
		qsort(out->after, out->nafter, sizeof(*out->after), cmp_str);
	if (ladder_hash(&out->fallback_hash, j) < 0)
		goto oom;
	return 0;
oom:
	state_policy_release(out);
	return VX_ENOMEM;
}

int policy_record(struct state_record *r, const struct stack *st, const struct stack_job *j)
{
	struct state_policy *p = calloc(1, sizeof(*p));

	if (!p || policy_of_job(p, st, j) < 0) {
		free(p);
		return VX_ENOMEM;
	}
	state_policy_free(r->applied);
	r->applied = p;
	return 0;
}

static int strs_same(char *const *a, size_t na, char *const *b, size_t nb)
{
	if (na != nb)
		return 0;
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i], b[i]))
			return 0;
	return 1;
}

static int add_strs(struct vx_buf *out, char *const *v, size_t n)
{
	int rc = vx_buf_addc(out, '[');

	for (size_t i = 0; i < n && rc == 0; i++)
		rc = vx_buf_printf(out, "%s%s", i ? ", " : "", v[i]);
	return rc == 0 ? vx_buf_addc(out, ']') : rc;
}

/* A duration as resubmit.delay is written: 90s, 5m, 1h, 1m30s. */
static int add_duration(struct vx_buf *out, int64_t ms)
{
	int64_t s = ms / 1000;

	if (ms % 1000)
		return vx_buf_printf(out, "%" PRId64 "ms", ms);
	if (s == 0 || s % 60)
		return s >= 60 ? vx_buf_printf(out, "%" PRId64 "m%" PRId64 "s", s / 60, s % 60)
			       : vx_buf_printf(out, "%" PRId64 "s", s);
	if (s % 3600 == 0)
		return vx_buf_printf(out, "%" PRId64 "h", s / 3600);
	return vx_buf_printf(out, "%" PRId64 "m", s / 60);
}

/* resubmit.on as written: [stockout, preempted], or {stockout: 6, preempted: 20}. */
static int add_on(struct vx_buf *out, const struct state_policy *p)
{
	int rc;

	if (!p->resubmit_budgets)
		return add_strs(out, p->resubmit_on, p->nresubmit_on);
	rc = vx_buf_addc(out, '{');
	for (size_t i = 0; i < p->nresubmit_on && rc == 0; i++)
		rc = vx_buf_printf(out, "%s%s: %" PRId64, i ? ", " : "", p->resubmit_on[i], p->resubmit_budgets[i]);
	return rc == 0 ? vx_buf_addc(out, '}') : rc;
}

static int on_same(const struct state_policy *a, const struct state_policy *d)
{
	if (!strs_same(a->resubmit_on, a->nresubmit_on, d->resubmit_on, d->nresubmit_on) ||
	    !a->resubmit_budgets != !d->resubmit_budgets)
		return 0;
	return !a->resubmit_budgets ||
	       !memcmp(a->resubmit_budgets, d->resubmit_budgets, a->nresubmit_on * sizeof(int64_t));
}

/* resubmit.within or returnAfter as written, or "none". */
static int add_within(struct vx_buf *out, int64_t ms)
{
	return ms ? add_duration(out, ms) : vx_buf_adds(out, "none");
}

/* resubmit.onExitCodes as written: [137, 143]. */
static int add_codes(struct vx_buf *out, const uint64_t *bits)
{
	int rc = vx_buf_addc(out, '[');

	for (int c = 1, first = 1; c < 256 && rc == 0; c++)
		if (bits[c / 64] & (UINT64_C(1) << (c % 64))) {
			rc = vx_buf_printf(out, "%s%d", first ? "" : ", ", c);
			first = 0;
		}
	return rc == 0 ? vx_buf_addc(out, ']') : rc;
}

static int add_rungs(struct vx_buf *out, int64_t n)
{
	if (!n)
		return vx_buf_adds(out, "none");
	return vx_buf_printf(out, "%" PRId64 " rung%s", n, n == 1 ? "" : "s");
}

static int add_limit(struct vx_buf *out, int64_t n)
{
	return n ? vx_buf_printf(out, "%" PRId64, n) : vx_buf_adds(out, "none");
}

/* Starts one field's entry: its separator and name. */
static int field(struct vx_buf *out, size_t start, const char *name, int plan)
{
	const char *sep = out->len == start ? "" : plan ? "; " : ", ";

	return vx_buf_printf(out, "%s%s%s", sep, name, plan ? ": " : " ");
}

int policy_diff(struct vx_buf *out, const struct state_policy *a, const struct state_policy *d, int plan)
{
	const char *arrow = plan ? " -> " : " \xe2\x86\x92 ";
	size_t start = out->len;
	int rc = 0;

	if (!on_same(a, d) &&
	    ((rc = field(out, start, "resubmit.on", plan)) < 0 || (rc = add_on(out, a)) < 0 ||
	     (rc = vx_buf_adds(out, arrow)) < 0 || (rc = add_on(out, d)) < 0))
		return VX_ENOMEM;
	if (a->max_attempts != d->max_attempts &&
	    ((rc = field(out, start, "resubmit.maxAttempts", plan)) < 0 ||
	     (rc = vx_buf_printf(out, "%" PRId64 "%s%" PRId64, a->max_attempts, arrow, d->max_attempts)) < 0))
		return VX_ENOMEM;
	if (memcmp(a->on_exit_codes, d->on_exit_codes, sizeof(a->on_exit_codes)) &&
	    ((rc = field(out, start, "resubmit.onExitCodes", plan)) < 0 ||
	     (rc = add_codes(out, a->on_exit_codes)) < 0 || (rc = vx_buf_adds(out, arrow)) < 0 ||
	     (rc = add_codes(out, d->on_exit_codes)) < 0))
		return VX_ENOMEM;
	if (a->within_ms != d->within_ms &&
	    ((rc = field(out, start, "resubmit.within", plan)) < 0 || (rc = add_within(out, a->within_ms)) < 0 ||
	     (rc = vx_buf_adds(out, arrow)) < 0 || (rc = add_within(out, d->within_ms)) < 0))
		return VX_ENOMEM;
	if (a->return_after_ms != d->return_after_ms &&
	    ((rc = field(out, start, "resubmit.returnAfter", plan)) < 0 ||
	     (rc = add_within(out, a->return_after_ms)) < 0 || (rc = vx_buf_adds(out, arrow)) < 0 ||
	     (rc = add_within(out, d->return_after_ms)) < 0))
		return VX_ENOMEM;
	if (a->max_queued_ms != d->max_queued_ms &&
	    ((rc = field(out, start, "resubmit.maxQueued", plan)) < 0 ||
	     (rc = add_within(out, a->max_queued_ms)) < 0 || (rc = vx_buf_adds(out, arrow)) < 0 ||
	     (rc = add_within(out, d->max_queued_ms)) < 0))
		return VX_ENOMEM;
	if (a->delay_ms != d->delay_ms &&
	    ((rc = field(out, start, "resubmit.delay", plan)) < 0 || (rc = add_duration(out, a->delay_ms)) < 0 ||
	     (rc = vx_buf_adds(out, arrow)) < 0 || (rc = add_duration(out, d->delay_ms)) < 0))
		return VX_ENOMEM;
	if ((a->fallback_rungs != d->fallback_rungs ||
	     strcmp(a->fallback_hash ? a->fallback_hash : "", d->fallback_hash ? d->fallback_hash : "")) &&
	    ((rc = field(out, start, "resubmit.fallback", plan)) < 0 || (rc = add_rungs(out, a->fallback_rungs)) < 0 ||
	     (rc = vx_buf_adds(out, arrow)) < 0 || (rc = add_rungs(out, d->fallback_rungs)) < 0 ||
	     (a->fallback_rungs == d->fallback_rungs && (rc = vx_buf_adds(out, ", edited")) < 0)))
		return VX_ENOMEM;
	if (!strs_same(a->after, a->nafter, d->after, d->nafter) &&
	    ((rc = field(out, start, "after", plan)) < 0 || (rc = add_strs(out, a->after, a->nafter)) < 0 ||
	     (rc = vx_buf_adds(out, arrow)) < 0 || (rc = add_strs(out, d->after, d->nafter)) < 0))
		return VX_ENOMEM;
	if (a->max_parallel != d->max_parallel &&
	    ((rc = field(out, start, "maxParallel", plan)) < 0 || (rc = add_limit(out, a->max_parallel)) < 0 ||
	     (rc = vx_buf_adds(out, arrow)) < 0 || (rc = add_limit(out, d->max_parallel)) < 0))
		return VX_ENOMEM;
	if (a->max_failed != d->max_failed &&
	    ((rc = field(out, start, "maxFailed", plan)) < 0 || (rc = add_limit(out, a->max_failed)) < 0 ||
	     (rc = vx_buf_adds(out, arrow)) < 0 || (rc = add_limit(out, d->max_failed)) < 0))
		return VX_ENOMEM;
	return out->len != start;
}
