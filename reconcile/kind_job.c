/*
 * The job kind: Vertex AI CustomJobs. Its three-way diff is reconcile/plan.c
 * (pure, over plain structs, fed by planner.c), its executor the batched,
 * journaled creates of reconcile/apply.c; this file is its row of the kind
 * table.
 */
#include "reconcile/kind.h"

#include <stdlib.h>
#include <string.h>

#include "reconcile/applier.h"
#include "reconcile/stack.h"
#include "util/buf.h"
#include "reconcile/planner.h"
#include "util/banned.h"

/* One filtered list per place a declared job or a current run lives in. */
static int job_refresh(struct live_store *out, struct provider *p, const struct stack *st,
		       const struct state *state, struct vx_err *err)
{
	struct planner_place *places = NULL;
	size_t n = 0;
	int rc = planner_places(st, state, &places, &n);

	if (rc < 0)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct live_jobs js = { 0 };
		char *where = strcmp(places[i].project, st->project)
			? vx_asprintf("%s/%s", places[i].project, places[i].region)
			: vx_strdup(places[i].region);

		if (!where || live_store_note(out, 1, where) < 0) {
			free(where);
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			break;
		}
		rc = p->list_jobs(p, places[i].project, places[i].region, st->name, &js, err);
		if (rc < 0)
			rc = vx_err_wrap(err, "reading live jobs in %s", where);
		for (size_t k = 0; k < js.n && rc == 0; k++)
			if (live_jobs_push(&out->jobs, &js.items[k]) < 0)
				rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		live_jobs_release(&js);
		free(where);
	}
	free(places);
	return rc;
}

static int job_apply(struct applier *a, int removals, struct vx_err *err)
{
	return removals ? apply_job_removals(a, err) : apply_job_changes(a, err);
}

const struct kind kind_job = {
	.name = "CustomJob",
	.prefix = "job",
	.phase = 2,
	.refresh = job_refresh,
	.plan = planner_plan_jobs,
	.apply = job_apply,
	.describe = NULL,
};
