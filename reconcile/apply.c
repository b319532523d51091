/*
 * The apply executor, written once for every kind (reconcile/kind.h): it
 * runs the kinds' removals in reverse phase order, then their changes in
 * phase order, and gives them the shared steps of reconcile/applier.h
 * (progress, the commit of each step, failures, the lease heartbeat and
 * fence, the journal). What a kind's actions do is in its kind_*.c.
 */
#include "reconcile/apply.h"
#include "reconcile/applier.h"
#include "reconcile/kind.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/failure.h"
#include "reconcile/plan.h"
#include "reconcile/provider.h"
#include "reconcile/runlabel.h"
#include "reconcile/stack.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/banned.h"

void apply_result_release(struct apply_result *r)
{
	vx_diags_release(&r->failures);
	for (size_t i = 0; i < r->ncreated; i++) {
		free(r->created[i]);
		free(r->created_regions[i]);
	}
	free(r->created);
	free(r->created_regions);
	memset(r, 0, sizeof(*r));
}

static int fence_check(void *ud, struct vx_err *err)
{
	struct applier *a = ud;
	int rc = a->hooks->fence(a->hooks->ud, err);

	if (rc < 0) {
		pthread_mutex_lock(&a->fence_lock);
		if (!a->fenced) {
			a->fenced = 1;
			(void)vx_err_set(&a->fence_err, rc, "%s", vx_err_msg(err));
		}
		pthread_mutex_unlock(&a->fence_lock);
	}
	return rc;
}

const struct provider_fence *applier_fence(const struct applier *a)
{
	return a->hooks->fence ? &a->fence : NULL;
}

int applier_fenced(const struct applier *a)
{
	int f;

	pthread_mutex_lock((pthread_mutex_t *)(uintptr_t)&a->fence_lock);
	f = a->fenced;
	pthread_mutex_unlock((pthread_mutex_t *)(uintptr_t)&a->fence_lock);
	return f;
}

int applier_fence_stop(struct applier *a, struct vx_err *err)
{
	a->res->fenced = 1;
	return vx_err_set(err, a->fence_err.code, "%s", vx_err_msg(&a->fence_err));
}

void applier_mark_failed(struct applier *a, const char *address)
{
	char **grown = realloc(a->failed, (a->nfailed + 1) * sizeof(*grown));

	if (!grown || !(grown[a->nfailed] = strdup(address))) {
		if (grown)
			a->failed = grown;
		a->oom = 1;
		return;
	}
	a->failed = grown;
	a->nfailed++;
}

int applier_has_failed(const struct applier *a, const char *address)
{
	for (size_t i = 0; i < a->nfailed; i++)
		if (!strcmp(a->failed[i], address))
			return 1;
	return 0;
}


void applier_progress(struct applier *a, const char *fmt, ...)
{
	struct vx_buf b = VX_BUF_INIT;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vx_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	if (rc == 0) {
		if (a->hooks->progress)
			a->hooks->progress(a->hooks->ud, vx_buf_str(&b));
		if (vx_buf_add(&a->msg, b.data, b.len) < 0 || vx_buf_addc(&a->msg, '\n') < 0)
			a->oom = 1;
	}
	vx_buf_release(&b);
}

void applier_fail(struct applier *a, const char *address, const char *what, const struct vx_err *e)
{
	a->res->failed++;
	vx_diags_add(&a->res->failures, NULL, 0, 0, "%s: %s: %s", address, what, vx_err_msg(e));
	if (a->hooks->progress) {
		char *line = vx_asprintf("! %s %s failed: %s", address, what, vx_err_msg(e));

		if (line)
			a->hooks->progress(a->hooks->ud, line);
		free(line);
	}
}

int applier_persist(struct applier *a, const char *summary, struct vx_err *err)
{
	struct vx_buf m = VX_BUF_INIT;
	int rc;

	if (a->oom)
		return vx_err_set(err, VX_ENOMEM, "apply: out of memory");
	if (a->msg.len == 0)
		return 0;
	rc = vx_buf_printf(&m, "%s\n\n%s", summary, vx_buf_str(&a->msg));
	if (rc == 0)
		rc = a->hooks->persist(a->hooks->ud, a->state, vx_buf_str(&m), err);
	else
		rc = vx_err_set(err, VX_ENOMEM, "apply: out of memory");
	vx_buf_release(&m);
	vx_buf_reset(&a->msg);
	return rc;
}

int applier_heartbeat(struct applier *a, struct vx_err *err)
{
	return a->hooks->heartbeat ? a->hooks->heartbeat(a->hooks->ud, err) : 0;
}

int applier_record_action(struct applier *a, const char *address, const char *kind_name,
			  const char *decl_hash, struct state_run *run, struct vx_err *err)
{
	struct state_record *r = state_find(a->state, address);

	if (!r && state_add_record(a->state, address, kind_name, &r, err) < 0) {
		state_run_release(run);
		return err->code;
	}
	if (decl_hash) {
		free(r->spec_hash);
		r->spec_hash = vx_strdup(decl_hash);
	}
	if (!run->project)
		run->project = vx_strdup(a->opts->project);
	run->spec_hash = vx_strdup(r->spec_hash);
	run->attempt = 1;
	run->created_ms = vx_now_ms(a->ctx);
	run->config_commit = vx_strdup(a->opts->config_commit);
	run->launched_by = vx_strdup(a->opts->launched_by);
	run->has_value = 1;
	return state_record_start_run(r, run, err);
}

int applier_journal(struct applier *a, const char *address, const char *op,
		    const struct vx_label *labels, size_t nlabels, struct vx_err *err)
{
	struct state_intent in;
	int rc;

	/* Borrowed: state_journal_add keeps a copy. labels are sorted by key. */
	memset(&in, 0, sizeof(in));
	in.address = (char *)(uintptr_t)address;
	in.op = (char *)(uintptr_t)op;
	in.started_ms = vx_now_ms(a->ctx);
	in.labels = (struct vx_label *)(uintptr_t)labels;
	in.nlabels = nlabels;
	rc = state_journal_add(a->state, &in, err);
	if (rc == 0 && vx_buf_printf(&a->msg, "intent %s %s\n", address, op) < 0)
		a->oom = 1;
	return rc;
}

int apply_run(struct apply_result *result, struct vx_ctx *ctx, const struct plan *plan,
	      const struct stack *st, struct state *state, struct provider *prov,
	      const struct apply_options *opts, const struct apply_hooks *hooks, struct vx_err *err)
{
	struct applier a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.ctx = ctx;
	a.plan = plan;
	a.st = st;
	a.state = state;
	a.prov = prov;
	a.opts = opts;
	a.hooks = hooks;
	a.res = result;
	a.fence.check = fence_check;
	a.fence.ud = &a;
	pthread_mutex_init(&a.fence_lock, NULL);
	memset(result, 0, sizeof(*result));
	/* Removals in reverse phase order (jobs are cancelled before the
	 * reservation they run on is deleted), then changes in phase order
	 * (quota preferences, reservations, jobs). */
	rc = 0;
	for (size_t k = kind_count; k-- > 0 && rc == 0 && !a.res->fenced;)
		rc = kind_table[k]->apply(&a, 1, err);
	if (rc == 0)
		rc = applier_persist(&a, "vx: apply: removals", err);
	for (size_t k = 0; k < kind_count && rc == 0 && !a.res->fenced; k++)
		rc = kind_table[k]->apply(&a, 0, err);
	if (rc == 0)
		rc = applier_persist(&a, "vx: apply", err);
	for (size_t i = 0; i < a.nfailed; i++)
		free(a.failed[i]);
	free(a.failed);
	vx_buf_release(&a.msg);
	vx_err_release(&a.fence_err);
	pthread_mutex_destroy(&a.fence_lock);
	return rc;
}
