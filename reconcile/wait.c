#include "reconcile/wait.h"

#include <stdlib.h>
#include <string.h>

#include "reconcile/provider.h"
#include "reconcile/provider_job.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/banned.h"

static const struct live_job *find(const struct live_jobs *js, const char *name)
{
	for (size_t k = 0; js && name && k < js->n; k++)
		if (js->items[k].name && !strcmp(js->items[k].name, name))
			return &js->items[k];
	return NULL;
}

int wait_jobs(struct vx_ctx *ctx, char *const *names, size_t n, int until_done, int64_t poll_ms,
	      const struct wait_hooks *h, struct vx_err *err)
{
	char **last = calloc(n + 1, sizeof(*last));
	int64_t started = vx_mono_ms(ctx);
	int failed = 0, rc = 0;

	if (!last)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	for (;;) {
		const struct live_jobs *live = NULL;
		size_t pending = 0, running = 0, done = 0;
		int64_t secs;

		if ((rc = h->refresh(h->ud, &live, err)) < 0)
			break;
		secs = (vx_mono_ms(ctx) - started) / 1000;
		for (size_t i = 0; i < n; i++) {
			const struct live_job *lj = find(live, names[i]);
			const char *state = lj && lj->state ? lj->state : "JOB_STATE_UNSPECIFIED";

			if (!last[i] || strcmp(last[i], state) != 0) {
				free(last[i]);
				last[i] = vx_strdup(state);
				h->changed(h->ud, names[i], lj, state, secs);
			}
			if (!strcmp(state, "JOB_STATE_FAILED") || !strcmp(state, "JOB_STATE_CANCELLED") ||
			    !strcmp(state, "JOB_STATE_EXPIRED"))
				failed = 1;
			if (job_state_is_terminal(state))
				done++;
			else if (!strcmp(state, "JOB_STATE_RUNNING"))
				running++;
			if (until_done ? !job_state_is_terminal(state)
				       : (strcmp(state, "JOB_STATE_RUNNING") && !job_state_is_terminal(state)))
				pending++;
		}
		if (!pending || vx_interrupted(ctx))
			break;
		h->waiting(h->ud, pending, running, done, secs);
		vx_sleep_ms(ctx, poll_ms);
	}
	for (size_t i = 0; i < n; i++)
		free(last[i]);
	free(last);
	return rc < 0 ? rc : failed;
}
