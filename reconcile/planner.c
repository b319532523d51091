#include "reconcile/planner.h"

#include <stdlib.h>
#include <string.h>

#include "reconcile/kind.h"
#include "reconcile/sweep.h"
#include "state/state.h"
#include "util/banned.h"

void planner_release(struct planner *p)
{
	plan_release(&p->plan);
	for (size_t k = 0; k < kind_count; k++)
		if (kind_table[k]->plan_release)
			kind_table[k]->plan_release(p->scratch[k]);
	memset(p, 0, sizeof(*p));
}

int planner_run(struct planner *out, const struct stack *st, const struct state *state,
		const struct live_set *live, const struct planner_options *opts,
		struct vx_err *err)
{
	struct kind_plan_input kin;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	memset(&kin, 0, sizeof(kin));
	out->refresh = live != NULL;
	plan_lineage_label(out->lineage, state->lineage);
	kin.st = st;
	kin.state = state;
	kin.live = live;
	kin.lineage = out->lineage;
	if (opts) {
		kin.targets = opts->targets;
		kin.ntargets = opts->ntargets;
		kin.replaces = opts->replaces;
		kin.nreplaces = opts->nreplaces;
		kin.now_ms = opts->now_ms;
		kin.allow_other_lineage = opts->allow_other_lineage;
		kin.allow_released = opts->allow_released;
	}
	/* In reverse phase order: a removal may depend on what a later phase's
	 * plan does (a reservation is deleted only once this plan cancels the
	 * stack's jobs on it). */
	for (size_t k = kind_count; k-- > 0 && rc == 0;) {
		kin.scratch = &out->scratch[k];
		rc = kind_table[k]->plan(out, &kin, err);
	}
	/* Then what waits on another kind's actions, in phase order. */
	for (size_t k = 0; k < kind_count && rc == 0; k++) {
		if (!kind_table[k]->plan_after)
			continue;
		kin.scratch = &out->scratch[k];
		rc = kind_table[k]->plan_after(out, &kin, err);
	}
	if (rc == 0 && sweep_plan_limit(&out->plan, st) < 0)
		rc = vx_err_set(err, VX_ENOMEM, "plan: out of memory");
	if (rc < 0) {
		planner_release(out);
		return rc;
	}
	plan_sort(&out->plan);
	return 0;
	return rc;
}

int planner_migrate_legacy(struct state *state, const struct stack *st, size_t *migrated)
{
	*migrated = 0;
	for (size_t k = 0; k < kind_count; k++) {
		size_t n = 0;
		int rc;

		if (!kind_table[k]->migrate)
			continue;
		rc = kind_table[k]->migrate(state, st, &n);
		*migrated += n;
		if (rc < 0)
			return rc;
	}
	return 0;
}
