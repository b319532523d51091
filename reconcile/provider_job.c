#include "reconcile/provider_job.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/banned.h"

/* The table of p's chain that has op, and *impl the provider that holds it. */
#define FIND(op) provider_find(p, &provider_kind_job, offsetof(struct provider_job_ops, op), &impl)

const struct provider_kind provider_kind_job = { .name = "jobs" };

int provider_job_list(struct provider *p, const char *project, const char *region, const char *stack,
		      struct live_jobs *out, struct vx_err *err)
{
	struct provider *impl;
	const struct provider_job_ops *o = FIND(list);

	return o ? o->list(impl, project, region, stack, out, err) : provider_lacks(&provider_kind_job, "list", err);
}

int provider_job_list_runs(struct provider *p, const char *project, const char *region, const char *stack,
			   const char *job, struct live_jobs *out, struct vx_err *err)
{
	struct provider *impl;
	const struct provider_job_ops *o = FIND(list_runs);

	return o ? o->list_runs(impl, project, region, stack, job, out, err) : provider_lacks(&provider_kind_job, "list_runs", err);
}

int provider_job_list_active(struct provider *p, const char *project, const char *region, const char *stack,
			     struct live_jobs *out, struct vx_err *err)
{
	struct provider *impl;
	const struct provider_job_ops *o = FIND(list_active);

	return o ? o->list_active(impl, project, region, stack, out, err) : provider_lacks(&provider_kind_job, "list_active", err);
}

int provider_job_create(struct provider *p, const struct provider_job_request *req, struct live_job *out,
			struct vx_err *err)
{
	struct provider *impl;
	const struct provider_job_ops *o = FIND(create);

	return o ? o->create(impl, req, out, err) : provider_lacks(&provider_kind_job, "create", err);
}

int provider_job_cancel(struct provider *p, const char *name, const struct provider_fence *fence,
			struct vx_err *err)
{
	struct provider *impl;
	const struct provider_job_ops *o = FIND(cancel);

	return o ? o->cancel(impl, name, fence, err) : provider_lacks(&provider_kind_job, "cancel", err);
}

int provider_job_get(struct provider *p, const char *name, struct live_job *out, char **spec_json,
		     struct vx_err *err)
{
	struct provider *impl;
	const struct provider_job_ops *o = FIND(get);

	return o ? o->get(impl, name, out, spec_json, err) : provider_lacks(&provider_kind_job, "get", err);
}

void live_job_release(struct live_job *j)
{
	if (!j)
		return;
	free(j->name);
	free(j->region);
	free(j->display_name);
	free(j->state);
	vx_labels_free(j->labels, j->nlabels);
	free(j->error_message);
	memset(j, 0, sizeof(*j));
}

int live_job_copy(struct live_job *out, const struct live_job *in)
{
	memset(out, 0, sizeof(*out));
	out->create_ms = in->create_ms;
	out->start_ms = in->start_ms;
	out->end_ms = in->end_ms;
	out->error_code = in->error_code;
	if ((in->name && !(out->name = strdup(in->name))) ||
	    (in->region && !(out->region = strdup(in->region))) ||
	    (in->display_name && !(out->display_name = strdup(in->display_name))) ||
	    (in->state && !(out->state = strdup(in->state))) ||
	    (in->error_message && !(out->error_message = strdup(in->error_message))))
		goto oom;
	if (vx_labels_copy(&out->labels, &out->nlabels, in->labels, in->nlabels) < 0)
		goto oom;
	return 0;
oom:
	live_job_release(out);
	return VX_ENOMEM;
}

void live_jobs_release(struct live_jobs *js)
{
	for (size_t i = 0; i < js->n; i++)
		live_job_release(&js->items[i]);
	free(js->items);
	js->items = NULL;
	js->n = 0;
}

int live_jobs_push(struct live_jobs *js, const struct live_job *j)
{
	struct live_job *p = realloc(js->items, (js->n + 1) * sizeof(*p));

	if (!p)
		return VX_ENOMEM;
	js->items = p;
	if (live_job_copy(&js->items[js->n], j) < 0)
		return VX_ENOMEM;
	js->n++;
	return 0;
}

int live_jobs_take(struct live_jobs *js, struct live_jobs *src)
{
	struct live_job *p;

	if (!src->n)
		return 0;
	if (!js->n) {
		live_jobs_release(js);
		*js = *src;
		memset(src, 0, sizeof(*src));
		return 0;
	}
	if (src->n > SIZE_MAX / sizeof(*p) - js->n || !(p = realloc(js->items, (js->n + src->n) * sizeof(*p))))
		return VX_ENOMEM;
	memcpy(&p[js->n], src->items, src->n * sizeof(*p));
	js->items = p;
	js->n += src->n;
	free(src->items);
	memset(src, 0, sizeof(*src));
	return 0;
}

const char *live_job_label(const struct live_job *j, const char *key)
{
	for (size_t i = 0; i < j->nlabels; i++)
		if (!strcmp(j->labels[i].key, key))
			return j->labels[i].value;
	return NULL;
}

static int state_in(const char *state, const char *const *set)
{
	if (!state)
		return 0;
	for (; *set; set++)
		if (!strcmp(state, *set))
			return 1;
	return 0;
}

int job_state_is_active(const char *state)
{
	static const char *const active[] = {
		"JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING",
		"JOB_STATE_CANCELLING", "JOB_STATE_PAUSED", "JOB_STATE_UPDATING", NULL,
	};
	return state_in(state, active);
}

int job_state_is_terminal(const char *state)
{
	static const char *const terminal[] = {
		"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED",
		"JOB_STATE_EXPIRED", "JOB_STATE_PARTIALLY_SUCCEEDED", NULL,
	};
	return state_in(state, terminal);
}

const char *job_state_short(const char *state)
{
	static const struct { const char *full, *brief; } names[] = {
		{ "JOB_STATE_QUEUED", "queued" }, { "JOB_STATE_PENDING", "pending" },
		{ "JOB_STATE_RUNNING", "running" }, { "JOB_STATE_SUCCEEDED", "succeeded" },
		{ "JOB_STATE_FAILED", "failed" }, { "JOB_STATE_CANCELLING", "cancelling" },
		{ "JOB_STATE_CANCELLED", "cancelled" }, { "JOB_STATE_PAUSED", "paused" },
		{ "JOB_STATE_EXPIRED", "expired" }, { "JOB_STATE_UPDATING", "updating" },
		{ "JOB_STATE_PARTIALLY_SUCCEEDED", "partially succeeded" },
	};
	if (!state)
		return "unknown";
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(state, names[i].full))
			return names[i].brief;
	return "unknown";
}
