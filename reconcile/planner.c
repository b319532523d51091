#include "reconcile/planner.h"

#include <stdlib.h>
#include <string.h>

#include "reconcile/kind.h"
#include "reconcile/provider.h"
#include "reconcile/stack.h"
#include "reconcile/sweep.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/banned.h"

void planner_release(struct planner *p)
{
	plan_release(&p->plan);
	if (p->shapes)
		for (size_t i = 0; i < p->in.ndecls; i++)
			free(p->shapes[i]);
	free(p->shapes);
	free(p->decls);
	free(p->resubmit);
	free(p->records);
	free(p->runs);
	free(p->known);
	for (size_t i = 0; i < p->nrung_shapes; i++)
		free(p->rung_shapes[i]);
	free(p->rung_shapes);
	free(p->rung_regions);
	free(p->rung_ids);
	free(p->state_lost_hint);
	for (size_t i = 0; i < p->npolicies; i++)
		state_policy_release(&p->policies[i]);
	free(p->policies);
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
		out->in.allow_other_lineage = opts->allow_other_lineage;
		out->in.allow_released = opts->allow_released;
	}
	/* In reverse phase order: a removal may depend on what a later phase's
	 * plan does (a reservation is deleted only once this plan cancels the
	 * stack's jobs on it). */
	for (size_t k = kind_count; k-- > 0 && rc == 0;)
		rc = kind_table[k]->plan(out, &kin, err);
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

/* Replaces *hash by to when it is from. */
static int swap_hash(char **hash, const char *from, const char *to)
{
	char *n;

	if (!*hash || strcmp(*hash, from) != 0)
		return 0;
	if (!(n = vx_strdup(to)))
		return VX_ENOMEM;
	free(*hash);
	*hash = n;
	return 0;
}

int planner_migrate_legacy(struct state *state, const struct stack *st, size_t *migrated)
{
	*migrated = 0;
	for (size_t i = 0; i < state->nrecords; i++) {
		struct state_record *r = &state->records[i];
		const struct stack_job *j;
		char *json;

		if (strncmp(r->address, "job.", 4) != 0 || !(j = stack_find_job(st, r->address + 4)) ||
		    !j->spec.nsensitive || !r->spec_hash || strcmp(r->spec_hash, j->spec.legacy_hash) != 0)
			continue;
		/* A record whose spec changed since keeps its old form until its next
		 * run: the old secret is not known, so it cannot be keyed. */
		if (!(json = vx_strdup(j->spec.redacted_json)))
			return VX_ENOMEM;
		free(r->spec_json);
		r->spec_json = json;
		if (r->current && swap_hash(&r->current->spec_hash, j->spec.legacy_hash, j->spec.hash) < 0)
			return VX_ENOMEM;
		for (size_t h = 0; h < r->nhistory; h++)
			if (swap_hash(&r->history[h].spec_hash, j->spec.legacy_hash, j->spec.hash) < 0)
				return VX_ENOMEM;
		/* Last: the record counts as migrated only once all of it is. */
		if (swap_hash(&r->spec_hash, j->spec.legacy_hash, j->spec.hash) < 0)
			return VX_ENOMEM;
		(*migrated)++;
	}
	return 0;
}
