/*
 * The live jobs of this stack that no declaration or record accounts for:
 * this state's untracked runs (a crashed apply's leftovers, cancelled),
 * jobs vx cannot prove its own (warned about, left alone), another state's
 * jobs in the way of a create (a plan error: the state may be lost), and
 * jobs `vx state rm` released that still run.
 */
#include "reconcile/kind_job_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/kind.h"
#include "reconcile/provider.h"
#include "reconcile/provider_job.h"
#include "reconcile/sweep.h"
#include "util/buf.h"
#include "util/banned.h"

static int cmp_created(const void *a, const void *b)
{
	return strcmp(((const struct created *)a)->label, ((const struct created *)b)->label);
}

/* A live job in the way of a create, and the address it is in the way of. */
struct hit {
	const struct live_job *j;
	const char *address;
};

static int cmp_hit(const void *a, const void *b)
{
	const struct hit *x = a, *y = b;
	int c = strcmp(x->address, y->address);

	return c ? c : strcmp(x->j->name, y->j->name);
}

/* Whether a live job is one vx knows: a current or past run in the state, or adopted now. */
static int live_known(const struct builder *b, const struct live_job *j, const char **adopted,
		      size_t nadopted)
{
	return job_is_known(b, j->name) ||
	       (nadopted && bsearch(&j->name, adopted, nadopted, sizeof(*adopted), job_cmp_cstr) != NULL);
}

/*
 * The address ("job.NAME[k=v,...]") a sweep's hashed vx-job label stands
 * for, when a declaration or a record of this state has it; NULL when none
 * does (a label cannot be turned back into its address otherwise).
 */
static const char *label_address(const struct builder *b, const char *label)
{
	char have[SWEEP_LABEL_MAX + 1];

	if (!label || !strstr(label, "--"))
		return NULL;
	for (size_t i = 0; i < b->in->ndecls; i++) {
		const char *a = b->in->decls[i].address;

		if (a && !strncmp(a, "job.", 4) && strchr(a, '[')) {
			sweep_job_label(have, a + 4);
			if (!strcmp(have, label))
				return a;
		}
	}
	for (size_t i = 0; i < b->in->nrecords; i++) {
		const char *a = b->in->records[i].address;

		if (a && !strncmp(a, "job.", 4) && strchr(a, '[')) {
			sweep_job_label(have, a + 4);
			if (!strcmp(have, label))
				return a;
		}
	}
	return NULL;
}

/*
 * An active job with this stack's name that vx cannot prove is its own: its
 * vx-lineage names another state, or it has none (made by another tool, or
 * by a vx older than the label). Never cancelled or adopted; shown, with
 * how to resolve it.
 */
static void warn_foreign(struct builder *b, const struct live_job *j)
{
	const char *lin = live_job_label(j, "vx-lineage");
	const char *job = live_job_label(j, "vx-job");
	const char *addr = label_address(b, job);

	if (vx_diags_add(&b->p->warnings, NULL, 0, 0,
			 "%s%s: live job %s (%s) is labelled vx-stack=%s but %s%s%s; vx leaves it "
			 "alone. If another repository uses the stack name %s, rename one of the two "
			 "stacks; if it is a leftover of this one, cancel it with 'gcloud ai custom-jobs "
			 "cancel %s'", addr ? "" : "job.", addr ? addr : job ? job : "?", j->name, job_state_short(j->state), b->in->stack,
			 lin ? "belongs to another state (vx-lineage=" : "carries no state identity (vx-lineage)",
			 lin ? lin : "", lin ? ")" : "", b->in->stack, j->name) < 0)
		b->oom = 1;
}

/*
 * Whether j, a live job of this stack that this state cannot prove its own,
 * carries the address of a job this plan creates (index: the created
 * addresses, sorted). With a state, only an active one counts (two runs of
 * one job would run side by side); with none loaded, any: a job that has
 * ended is as sure a sign that this stack's state was lost, and creating
 * would run it again.
 */
static const struct created *collides(const struct builder *b, const struct live_job *j)
{
	const char *job = live_job_label(j, "vx-job");
	struct created key;

	if (!b->ncreated || !j->name || !job || !job_label_is(j, "vx-stack", b->in->stack) || job_owned(b, j))
		return NULL;
	if (!b->in->state_is_new &&
	    (!job_state_is_active(j->state) || !strcmp(j->state, "JOB_STATE_CANCELLING")))
		return NULL;
	if ((size_t)snprintf(key.label, sizeof(key.label), "%s", job) >= sizeof(key.label))
		return NULL;
	return bsearch(&key, b->created, b->ncreated, sizeof(*b->created), cmp_created);
}

/* Fills b->created (room for every action): the jobs this plan creates, sorted by label. */
static void index_created(struct builder *b)
{
	for (size_t i = 0; i < b->p->n; i++) {
		const struct plan_action *a = &b->p->actions[i];

		if (a->op != PLAN_CREATE || a->kind_of != &kind_job || strncmp(a->address, "job.", 4))
			continue;
		sweep_job_label(b->created[b->ncreated].label, a->address + 4);
		b->created[b->ncreated++].address = a->address;
	}
	qsort(b->created, b->ncreated, sizeof(*b->created), cmp_created);
}

/* The first few of n items, then "and N more". */
#define SHOW_FIRST 3

/*
 * Never creates a job beside a live run of it that another state of this
 * stack name launched (its vx-lineage is not this state's). With no state
 * loaded, that is almost always this stack's own state gone missing (CI
 * without state.remote, a clone without the state branch, a deleted
 * object), and creating would run every job twice: a plan error naming
 * the cause and the fix. With a state, another repository may use the
 * name: the same error, with that fix. -allow-other-lineage creates anyway
 * (the jobs are then only warned about, as any foreign job).
 */
void job_check_other_lineage(struct builder *b)
{
	const struct plan_input *in = b->in;
	struct vx_buf jobs = VX_BUF_INIT, lins = VX_BUF_INIT;
	struct hit *hit = NULL;
	const char **seen = NULL;
	size_t nhit = 0, nseen = 0;
	int rc = 0;

	if (!in->live || in->allow_other_lineage)
		return;
	b->created = calloc(b->p->n + 1, sizeof(*b->created));
	hit = calloc(in->live->n + 1, sizeof(*hit));
	seen = calloc(in->live->n + 1, sizeof(*seen));
	if (!b->created || !hit || !seen) {
		rc = VX_ENOMEM;
		goto done;
	}
	index_created(b);
	/* Only the live jobs that carry a created job's label can collide: they
	 * are found in by_job (sorted by label) for each create, so a plan of one
	 * create costs a lookup, not a look at every live job of the stack. */
	for (size_t k = 0; k < b->ncreated; k++) {
		const char *label = b->created[k].label;

		if (k && !strcmp(label, b->created[k - 1].label))
			continue; /* the same live jobs again */
		for (size_t i = job_by_job_lower(b, label);
		     i < b->nby_job && !strcmp(job_vx_job_of(b->by_job[i]), label); i++) {
			const struct created *c = collides(b, b->by_job[i]);

			if (c)
				hit[nhit++] = (struct hit){ .j = b->by_job[i], .address = c->address };
		}
	}
	if (!nhit)
		goto done;
	/* In address order, as the plan lists them (the lists come in any order). */
	qsort(hit, nhit, sizeof(*hit), cmp_hit);
	for (size_t i = 0; i < nhit && rc == 0; i++) {
		const char *lin = live_job_label(hit[i].j, "vx-lineage");
		size_t k = 0;

		if (i < SHOW_FIRST)
			rc = vx_buf_printf(&jobs, "%s%s (%s, %s)", i ? ", " : "", hit[i].address,
					   hit[i].j->name, job_state_short(hit[i].j->state));
		lin = lin ? lin : "none";
		/* Lineages are one or two: a scan is enough. */
		while (k < nseen && strcmp(seen[k], lin) != 0)
			k++;
		if (k == nseen && rc == 0) {
			rc = vx_buf_printf(&lins, "%s%s", nseen ? ", " : "", lin);
			seen[nseen++] = lin;
		}
	}
	if (rc == 0 && nhit > SHOW_FIRST)
		rc = vx_buf_printf(&jobs, " and %zu more", nhit - SHOW_FIRST);
	if (rc == 0 && in->state_is_new)
		rc = vx_diags_add(&b->p->errors, NULL, 0, 0,
			"the state of stack %s was not found (none was loaded: serial 0), but live jobs of "
			"this stack from another state (vx-lineage %s) carry %zu of the addresses this plan "
			"would create: %s. Creating them would run these jobs a second time. %s To create "
			"them anyway (they are not this stack's), re-run with -allow-other-lineage",
			in->stack, lins.data, nhit, jobs.data,
			in->state_lost_hint ? in->state_lost_hint
			: "Likely cause: the state was not read from where it is kept; fix that and plan again.");
	else if (rc == 0)
		rc = vx_diags_add(&b->p->errors, NULL, 0, 0,
			"active jobs of stack %s from another state (vx-lineage %s) run %zu of the jobs this "
			"plan would create: %s. Creating them would run each job twice. If another "
			"repository uses the stack name %s, rename one of the two stacks; if they are "
			"leftovers of this one, cancel them ('gcloud ai custom-jobs cancel NAME'); to create "
			"anyway, re-run with -allow-other-lineage",
			in->stack, lins.data, nhit, jobs.data, in->stack);
	b->other_lineage = 1;
done:
	if (rc < 0)
		b->oom = 1;
	vx_buf_release(&jobs);
	vx_buf_release(&lins);
	free(seen);
	free(hit);
}

/*
 * A job `vx state rm` released while it ran is still this stack's job in
 * Google Cloud, and still declared: the plan would create another of the
 * same address beside it, the two then running at once. Each such create
 * says so, naming the released job and its state: a plan error, or with
 * -allow-released a warning.
 */
void job_check_released(struct builder *b)
{
	const struct plan_input *in = b->in;
	char label[SWEEP_LABEL_MAX + 1];

	for (size_t i = 0; in->released && i < b->p->n; i++) {
		const struct plan_action *a = &b->p->actions[i];

		if ((a->op != PLAN_CREATE && a->op != PLAN_RERUN && a->op != PLAN_REPLACE) ||
		    a->kind_of != &kind_job || strncmp(a->address, "job.", 4) != 0)
			continue;
		sweep_job_label(label, a->address + 4);
		for (size_t k = 0; k < in->released->n; k++) {
			const struct live_job *j = &in->released->items[k];
			int rc;

			if (!j->name || !j->state || !job_state_is_active(j->state) ||
			    !job_label_is(j, "vx-stack", in->stack) || !job_label_is(j, "vx-job", label))
				continue;
			if (in->allow_released)
				rc = vx_diags_add(&b->p->warnings, NULL, 0, 0,
					"%s: the job released from the state of the same address is still active "
					"(%s, %s); this plan creates another beside it (-allow-released)",
					a->address, j->name, job_state_short(j->state));
			else
				rc = vx_diags_add(&b->p->errors, NULL, 0, 0,
					"%s: the job released from the state of the same address (vx state rm) is "
					"still active (%s, %s); creating %s again would run both. Cancel it "
					"('gcloud ai custom-jobs cancel %s') or wait for it to end; to create "
					"another beside it, re-run with -allow-released",
					a->address, j->name, job_state_short(j->state), a->address, j->name);
			if (rc < 0)
				b->oom = 1;
		}
	}
}

/* Active jobs labelled for this stack and this state that nothing accounts
 * for: a crashed apply's leftovers or duplicates. They cost money: the plan
 * cancels them, and touches no record (the action has none). */
void job_plan_untracked(struct builder *b)
{
	const char **adopted = NULL;
	size_t nadopted = 0;

	if (!b->in->live || b->in->ntargets)
		return;
	adopted = calloc(b->p->n + 1, sizeof(*adopted));
	if (!adopted) {
		b->oom = 1;
		return;
	}
	for (size_t i = 0; i < b->p->n; i++)
		if (job_action_of(&b->p->actions[i])->adopt_name)
			adopted[nadopted++] = job_action_of(&b->p->actions[i])->adopt_name;
	qsort(adopted, nadopted, sizeof(*adopted), job_cmp_cstr);
	for (size_t i = 0; i < b->in->live->n && !b->oom; i++) {
		const struct live_job *j = &b->in->live->items[i];
		const char *job = live_job_label(j, "vx-job");
		struct plan_action *a;
		struct job_action *ja;
		char *addr;

		if (!j->name || !job_label_is(j, "vx-stack", b->in->stack) || live_known(b, j, adopted, nadopted))
			continue;
		if (!job_state_is_active(j->state) || !strcmp(j->state, "JOB_STATE_CANCELLING"))
			continue;
		if (!job_owned(b, j)) {
			if (!b->other_lineage || !collides(b, j))
				warn_foreign(b, j);
			continue;
		}
		addr = vx_asprintf("job.%s", job ? job : "?");
		if (!addr) {
			b->oom = 1;
			break;
		}
		a = job_add_action(b, PLAN_CANCEL, addr);
		ja = job_action_mut(a);
		free(addr);
		if (!a)
			break;
		job_set_str(b, &ja->cancel_name, j->name);
		job_set_str(b, &ja->live_state, j->state);
		job_set_str(b, &a->region, j->region);
		job_set_fmt(b, &a->reason, vx_asprintf("untracked live job %s (%s%s%s) carries this stack's labels "
						   "but no state record or declaration accounts for it",
						   j->name, job_state_short(j->state),
						   label_address(b, job) ? ", a run of " : "",
						   label_address(b, job) ? label_address(b, job) : ""));
		job_set_fmt(b, &a->drift, vx_asprintf("untracked job %s", j->name));
		b->p->drifts++;
	}
	free(adopted);
}
