#include "reconcile/runlabel.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/plan.h"
#include "reconcile/sweep.h"
#include "util/banned.h"

static const char *const keys[RUNLABEL_N] = { "vx-stack", "vx-lineage", "vx-job", "vx-spec", "vx-run",
					      "vx-attempt", "vx-rung" };

int runlabel_build(struct vx_label **out, size_t *n, const struct run_id *id,
		   const struct vx_label *extra, size_t nextra)
{
	char shorth[13], lin[13], runs[24], atts[24], rungs[24], job[SWEEP_LABEL_MAX + 1];
	const char *vals[RUNLABEL_N];
	struct vx_label *l = NULL;
	size_t k = 0;

	*out = NULL;
	*n = 0;
	plan_short_hash(shorth, id->spec_hash);
	plan_lineage_label(lin, id->lineage);
	snprintf(runs, sizeof(runs), "%" PRId64, id->run);
	snprintf(atts, sizeof(atts), "%" PRId64, id->attempt);
	snprintf(rungs, sizeof(rungs), "%" PRId64, id->rung);
	vals[0] = id->stack;
	vals[1] = lin;
	/* a sweep's run "lr-sweep[lr=3e-4]" cannot be a label value as it is */
	if (id->job)
		sweep_job_label(job, id->job);
	vals[2] = id->job ? job : NULL;
	vals[3] = shorth;
	vals[4] = runs;
	vals[5] = atts;
	vals[6] = rungs;
	for (size_t i = 0; i < nextra; i++)
		if (vx_labels_set(&l, &k, extra[i].key, extra[i].value) < 0)
			goto oom;
	for (size_t i = 0; i < RUNLABEL_N; i++)
		if (vx_labels_set(&l, &k, keys[i], vals[i] ? vals[i] : "") < 0)
			goto oom;
	*out = l;
	*n = k;
	return 0;
oom:
	vx_labels_free(l, k);
	return VX_ENOMEM;
}

int runlabel_match(const struct vx_label *have, size_t nhave, const struct vx_label *want,
		   size_t nwant, unsigned which)
{
	for (size_t i = 0; i < RUNLABEL_N; i++) {
		const char *h, *w;

		if (!(which & (1u << i)))
			continue;
		h = vx_labels_get(have, nhave, keys[i]);
		w = vx_labels_get(want, nwant, keys[i]);
		if (!h || !w || strcmp(h, w) != 0)
			return 0;
	}
	return 1;
}
