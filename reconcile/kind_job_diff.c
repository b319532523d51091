/*
 * The job kind's three-way diff (reconcile/plan.h's plan_build): each
 * declared job against its record and the live jobs (what changed, and so
 * which action: create, noop, update, replace, rerun), each record no
 * longer declared (cancel, forget), then the live jobs nothing accounts
 * for (kind_job_foreign.c). Pure over plain structs, so every rule is
 * unit-tested. The indexes of struct builder make every lookup by name or
 * address one hash table probe (by vx-job label, a binary search).
 */
#include "reconcile/plan.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/kind.h"
#include "reconcile/kind_job_internal.h"
#include "reconcile/policy.h"
#include "reconcile/provider.h"
#include "reconcile/load/spec.h"
#include "reconcile/provider_job.h"
#include "reconcile/sweep.h"
#include "util/buf.h"
#include "util/banned.h"

/* Whether -replace names address: itself, its sweep or a slice of that. */
int job_replaced(const struct builder *b, const char *address)
{
	for (size_t i = 0; i < b->in->nreplaces; i++)
		if (sweep_address_matches(b->in->replaces[i], address))
			return 1;
	return 0;
}

int job_cmp_live_name(const void *a, const void *b)
{
	return strcmp((*(const struct live_job *const *)a)->name, (*(const struct live_job *const *)b)->name);
}

const char *job_vx_job_of(const struct live_job *j)
{
	const char *v = live_job_label(j, "vx-job");

	return v ? v : "";
}

/* A live job with its vx-job label, for sorting by it (each label found once, not per comparison). */
struct keyed_job {
	const char *key;
	const struct live_job *j;
};

/* By vx-job label; jobs with the same label in the order they were listed (what a stable sort keeps). */
static int cmp_keyed_job(const void *a, const void *b)
{
	const struct keyed_job *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	return c ? c : (x->j > y->j) - (x->j < y->j);
}

/* b->by_job sorted by vx-job label. VX_ENOMEM. */
static int sort_by_job(struct builder *b)
{
	struct keyed_job *k = calloc(b->nby_job + 1, sizeof(*k));

	if (!k)
		return VX_ENOMEM;
	for (size_t i = 0; i < b->nby_job; i++) {
		k[i].key = job_vx_job_of(b->by_job[i]);
		k[i].j = b->by_job[i];
	}
	qsort(k, b->nby_job, sizeof(*k), cmp_keyed_job);
	for (size_t i = 0; i < b->nby_job; i++)
		b->by_job[i] = k[i].j;
	free(k);
	return 0;
}

int job_cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int job_label_is(const struct live_job *j, const char *key, const char *want)
{
	const char *v = live_job_label(j, key);

	return v && !strcmp(v, want);
}

/* Looks up a live job by resource name. */
static const struct live_job *live_by_name(const struct builder *b, const char *name)
{
	size_t at;

	if (!name || !vx_hashmap_get(&b->by_name, name, strlen(name), &at))
		return NULL;
	return &b->in->live->items[at];
}

/* The first index in by_job whose vx-job label is >= name. */
size_t job_by_job_lower(const struct builder *b, const char *name)
{
	size_t lo = 0, hi = b->nby_job;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(job_vx_job_of(b->by_job[mid]), name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int job_is_known(const struct builder *b, const char *name)
{
	size_t at;

	return name && vx_hashmap_get(&b->known, name, strlen(name), &at);
}

/*
 * Whether vx can prove a live job is this stack's: the state knows it by
 * name, or it carries this state's identity (vx-lineage). A job with the
 * stack's name alone may be another repository's that chose the same name.
 */
int job_owned(const struct builder *b, const struct live_job *j)
{
	return job_is_known(b, j->name) ||
	       (b->in->lineage && *b->in->lineage && job_label_is(j, "vx-lineage", b->in->lineage));
}

struct plan_action *job_add_action(struct builder *b, enum plan_op kind, const char *address)
{
	struct plan_action *a = plan_add_action(b->p, kind, &kind_job, address);

	if (!a)
		b->oom = 1;
	return a;
}

void job_set_str(struct builder *b, char **dst, const char *src)
{
	free(*dst);
	*dst = NULL;
	if (src && !(*dst = strdup(src)))
		b->oom = 1;
}

void job_set_fmt(struct builder *b, char **dst, char *formatted)
{
	free(*dst);
	*dst = formatted;
	if (!formatted)
		b->oom = 1;
}

void job_fill_decl(struct builder *b, struct plan_action *a, const struct plan_decl *d)
{
	struct job_action *ja = job_action_mut(a);

	ja->decl = d;
	ja->max_attempts = d->max_attempts;
	job_set_str(b, &a->shape, d->shape);
	job_set_str(b, &ja->new_hash, d->spec_hash);
	job_set_str(b, &a->region, d->region);
}

static const struct plan_record *find_record(const struct builder *b, const char *address)
{
	size_t at;

	return vx_hashmap_get(&b->records, address, strlen(address), &at) ? &b->in->records[at] : NULL;
}

static const struct plan_decl *find_decl(const struct builder *b, const char *address)
{
	size_t at;

	return vx_hashmap_get(&b->decls, address, strlen(address), &at) ? &b->in->decls[at] : NULL;
}

static int targeted(const struct plan_input *in, const char *address)
{
	/* a sweep's address or a slice of it names its runs (reconcile/sweep.h) */
	for (size_t i = 0; i < in->ntargets; i++)
		if (sweep_address_matches(in->targets[i], address))
			return 1;
	return in->ntargets == 0;
}

/* A declared job with no current run: a new job, or one whose last create never made a run. */
static void plan_first_run(struct builder *b, const struct plan_decl *d, const struct plan_record *rec)
{
	const struct live_job *seen = NULL;
	int64_t attempt = 1;
	struct plan_action *a;
	struct job_action *ja;
	char *why;

	if (job_refusal_gate(b, d, rec, &attempt, &why))
		return;
	if (job_maybe_adopt(b, d, rec, attempt, 0, "new job", NULL)) {
		free(why);
		return;
	}
	attempt = job_next_attempt(b, d, attempt, &seen);
	a = job_add_action(b, PLAN_CREATE, d->address);
	ja = job_action_mut(a);
	if (!a) {
		free(why);
		return;
	}
	job_fill_decl(b, a, d);
	ja->record = rec;
	ja->run = d->run;
	ja->attempt = attempt;
	if (why)
		job_set_fmt(b, &a->reason, why);
	else
		job_set_str(b, &a->reason, rec ? "no current run in state" : "new job");
	job_note_seen(b, a, seen);
}

/* Where the current run stands: live when refreshing, else as last seen. */
static void run_now(struct builder *b, const struct plan_run *cur, struct failed *f)
{
	if (b->in->live) {
		f->lj = live_by_name(b, cur->name);
		if (f->lj) {
			f->state = f->lj->state;
			f->code = f->lj->error_code;
			f->msg = f->lj->error_message;
		} else {
			f->vanished = 1;
		}
	} else {
		f->state = cur->state;
		f->code = cur->error_code;
		f->msg = cur->error_message;
	}
}

/* How the declaration differs from what the current run was made of. */
struct change {
	int forced;       /* -replace names it */
	int moved;        /* its project or region changed (job_run_moved) */
	int respec;       /* its spec or run changed */
	int unrunged;     /* active, and its rung is no longer on the ladder */
	int changed;      /* any of the three above */
	int64_t attempt;  /* the attempt a new run is */
};

/* Why a new run is planned, for the plan's reason; NULL when out of memory. */
static char *change_why(const struct plan_decl *d, const struct plan_record *rec, const struct plan_run *cur,
			const struct change *c)
{
	char *why;

	if (c->forced && !c->changed)
		why = vx_asprintf("replacement requested (-replace %s)", d->address);
	else if (c->moved)
		why = vx_asprintf("moved from %s/%s to %s/%s", cur->project ? cur->project : d->project,
				  cur->region ? cur->region : "?", d->project, d->region);
	else if (c->unrunged && !c->respec) {
		char *what = job_rung_words(cur);

		why = what ? vx_asprintf("its rung (%s) is no longer on the ladder", what) : NULL;
		free(what);
	}
	else if (rec->run != d->run && strcmp(rec->spec_hash ? rec->spec_hash : "", d->spec_hash) == 0)
		why = vx_asprintf("run bumped %" PRId64 " -> %" PRId64, rec->run, d->run);
	else if (d->spec_json && rec->spec_json) {
		char *paths = spec_diff_paths(rec->spec_json, d->spec_json);

		why = paths && *paths ? vx_asprintf("spec changed: %s", paths)
				      : vx_asprintf("spec changed");
		free(paths);
	} else
		why = vx_asprintf("spec changed");
	return why;
}

/*
 * The declaration changed (or -replace) while its current run is active:
 * the change waits (onChange), or the run is replaced (cancelled, and a
 * new one created or adopted); a protected job's replace is a plan error.
 */
static void plan_change_active(struct builder *b, const struct plan_decl *d, const struct plan_record *rec,
			       const struct failed *f, const struct change *c, const char *why)
{
	const struct plan_run *cur = rec->current;
	const char *state = f->state;
	struct plan_action *a;
	struct job_action *ja;

	if (d->on_change != PLAN_ON_CHANGE_REPLACE && !c->forced) {
		a = job_add_action(b, PLAN_NOOP, d->address);
		ja = job_action_mut(a);
		if (a) {
			job_fill_decl(b, a, d);
			ja->record = rec;
			job_set_str(b, &ja->old_hash, rec->spec_hash);
			job_set_str(b, &ja->live_state, state);
			job_set_fmt(b, &a->reason, vx_asprintf(
				"%s; the current run %s is %s and onChange is %s",
				why, cur->name, job_state_short(state),
				d->on_change == PLAN_ON_CHANGE_IGNORE ? "ignore: the change waits"
				: "after-finish: a new run starts when it ends"));
		}
		return;
	}
	if (d->protect) {
		vx_diags_add(&b->p->errors, NULL, 0, 0,
			     "%s is protected (protect: true): %s would cancel its active run %s; "
			     "set protect: false, or onChange: after-finish",
			     d->address, why, cur->name);
	}
	if (!job_maybe_adopt(b, d, rec, c->attempt, 0, why, cur->name)) {
		a = job_add_action(b, PLAN_REPLACE, d->address);
		ja = job_action_mut(a);
		if (a) {
			job_fill_decl(b, a, d);
			ja->record = rec;
			ja->run = d->run;
			ja->attempt = c->attempt;
			job_set_str(b, &ja->old_hash, rec->spec_hash);
			job_set_str(b, &ja->cancel_name, cur->name);
			job_set_str(b, &ja->live_state, state);
			job_set_fmt(b, &a->reason, vx_asprintf("%s while %s", why, job_state_short(state)));
		}
	}
}

/* The declaration changed (or -replace) and the current run has ended (or is cancelling): a new run. */
static void plan_change_ended(struct builder *b, const struct plan_decl *d, const struct plan_record *rec,
			      const struct failed *f, const char *why)
{
	const struct live_job *seen = NULL;
	struct plan_action *a;
	struct job_action *ja;
	char *refused = NULL;
	int64_t first = 1;

	if (!job_refusal_gate(b, d, rec, &first, &refused) &&
	    !job_maybe_adopt(b, d, rec, first, 0, why, NULL)) {
		first = job_next_attempt(b, d, first, &seen);
		a = job_add_action(b, PLAN_RERUN, d->address);
		ja = job_action_mut(a);
		if (a) {
			job_fill_decl(b, a, d);
			ja->record = rec;
			ja->run = d->run;
			ja->attempt = first;
			job_set_str(b, &ja->old_hash, rec->spec_hash);
			job_set_str(b, &ja->live_state, f->state);
			job_set_fmt(b, &a->reason, vx_asprintf("%s after the last run %s%s%s", why,
							       f->vanished ? "vanished" : job_state_short(f->state),
							       refused ? "; " : "", refused ? refused : ""));
			job_note_seen(b, a, seen);
		}
	}
	free(refused);
}

/* Same spec and run: active or succeeded is a noop; a failure may resubmit. */
static void plan_same(struct builder *b, const struct plan_decl *d, const struct plan_record *rec,
		      struct failed *f)
{
	const struct plan_run *cur = rec->current;
	struct plan_action *a;

	f->cls = job_run_failure(b, d, rec, f);
	if (!f->cls && job_plan_queued(b, d, rec, f))
		return;
	if (!f->cls) {
		a = job_add_action(b, PLAN_NOOP, d->address);
		if (!a)
			return;
		job_fill_decl(b, a, d);
		/* It runs (or ran) where its rung put it: cost and quota count it there. */
		job_set_rung(b, a, d, f->at);
		job_action_mut(a)->record = rec;
		job_set_str(b, &job_action_mut(a)->old_hash, rec->spec_hash);
		job_set_str(b, &job_action_mut(a)->live_state, f->state);
		return;
	}
	a = job_plan_failed(b, d, rec, f);
	if (!a)
		return;
	if (!strcmp(f->cls, "cancelled-outside")) {
		job_set_fmt(b, &a->drift, vx_asprintf(f->vanished ? "run %s was deleted outside vx"
						      : "run %s was cancelled outside vx", cur->name));
		b->p->drifts++;
	}
}

static void plan_declared(struct builder *b, const struct plan_decl *d, const struct plan_record *rec)
{
	const struct plan_run *cur = rec ? rec->current : NULL;
	struct failed f = { 0 };
	struct change c = { 0 };
	struct plan_action *a;
	struct job_action *ja;
	char *why;

	if (!cur) {
		plan_first_run(b, d, rec);
		return;
	}
	run_now(b, cur, &f);
	c.forced = job_replaced(b, d->address);
	c.moved = job_run_moved(cur, d);
	c.respec = strcmp(rec->spec_hash ? rec->spec_hash : "", d->spec_hash) != 0 || rec->run != d->run;
	/* An active run whose rung is no longer on the ladder is changed like
	 * its spec; one that ended stays where it ran (a failed one's next
	 * attempt goes where the ladder now says). */
	c.unrunged = !job_run_rung(cur, d, &f.at) && f.state && job_state_is_active(f.state) &&
		     strcmp(f.state, "JOB_STATE_CANCELLING") != 0;
	c.changed = c.respec || c.moved || c.unrunged;
	/* The new run of a job whose rung left the ladder is the next attempt
	 * of the same run: maxAttempts keeps counting. */
	c.attempt = c.respec || c.moved || !c.unrunged ? 1 : cur->attempt + 1;

	if (f.vanished) {
		/* A run we launched is gone from the API: deleted outside vx. */
		if (cur->state && !strcmp(cur->state, "JOB_STATE_SUCCEEDED") && !c.changed && !c.forced) {
			a = job_add_action(b, PLAN_NOOP, d->address);
			ja = job_action_mut(a);
			if (!a)
				return;
			job_fill_decl(b, a, d);
			ja->record = rec;
			job_set_str(b, &ja->old_hash, rec->spec_hash);
			job_set_fmt(b, &a->drift, vx_asprintf("run %s succeeded and has since been deleted", cur->name));
			b->p->drifts++;
			return;
		}
		f.state = "JOB_STATE_CANCELLED";
		f.code = 1;
		f.msg = "deleted outside vx";
	}
	if (!c.changed && !c.forced) {
		plan_same(b, d, rec, &f);
		return;
	}
	if (!(why = change_why(d, rec, cur, &c))) {
		b->oom = 1;
		return;
	}
	if (f.state && job_state_is_active(f.state) && strcmp(f.state, "JOB_STATE_CANCELLING") != 0)
		plan_change_active(b, d, rec, &f, &c, why);
	else
		/* Finished (or cancelling): a new run. */
		plan_change_ended(b, d, rec, &f, why);
	free(why);
}

static const char *on_remove_word(enum plan_on_remove v)
{
	return v == PLAN_ON_REMOVE_CANCEL ? "cancel" : v == PLAN_ON_REMOVE_FORGET ? "forget" : "unset";
}

/* Whether the policy d declares is not the one rec records as applied (reconcile/policy.h). */
static int policy_moved(const struct plan_decl *d, const struct plan_record *rec)
{
	struct vx_buf b = VX_BUF_INIT;
	int rc;

	if (!d->policy)
		return 0;
	if (!rec->applied)
		return 1;
	rc = policy_diff(&b, rec->applied, d->policy, 1);
	vx_buf_release(&b);
	return rc != 0;
}

/*
 * Declaration-only settings take effect from the declaration at plan time;
 * the state keeps `protect` and `onRemove` so that a job removed from the
 * declaration stays protected and is removed as it said. The policy the
 * watcher acts on (reconcile/policy.h) is recorded too, so that only an
 * apply changes it. When one differs, an otherwise unchanged job is an
 * update: the apply records the settings and starts no run.
 */
static void settings_update(struct builder *b, const struct plan_decl *d, const struct plan_record *rec,
			    size_t first)
{
	for (size_t i = first; rec && i < b->p->n && !b->oom; i++) {
		struct plan_action *a = &b->p->actions[i];
		struct vx_buf why = VX_BUF_INIT;
		int rc = 0;

		if (a->op != PLAN_NOOP || !job_action_of(a)->decl ||
		    (!rec->protect == !d->protect && rec->on_remove == d->on_remove && !policy_moved(d, rec)))
			continue;
		if (!rec->protect != !d->protect)
			rc = vx_buf_printf(&why, "protect: %s -> %s", rec->protect ? "true" : "false",
					   d->protect ? "true" : "false");
		if (rc == 0 && rec->on_remove != d->on_remove)
			rc = vx_buf_printf(&why, "%sonRemove: %s -> %s", why.len ? "; " : "",
					   on_remove_word(rec->on_remove), on_remove_word(d->on_remove));
		if (rc == 0 && policy_moved(d, rec) && !rec->applied)
			rc = vx_buf_printf(&why, "%srecords the policy applied (resubmit, after:, the sweep's "
					   "limits): the state holds none, it was written by an older vx",
					   why.len ? "; " : "");
		else if (rc == 0 && policy_moved(d, rec) && (rc = vx_buf_adds(&why, why.len ? "; " : "")) == 0)
			rc = policy_diff(&why, rec->applied, d->policy, 1) < 0 ? VX_ENOMEM : 0;
		if (rc == 0 && a->reason)
			rc = vx_buf_printf(&why, "; %s", a->reason);
		job_set_fmt(b, &a->reason, rc == 0 ? vx_buf_detach(&why) : NULL);
		vx_buf_release(&why);
		b->p->counts[PLAN_NOOP]--;
		b->p->counts[PLAN_UPDATE]++;
		a->op = PLAN_UPDATE;
	}
}

/*
 * Whether removing rec's declaration forgets its active run rather than
 * cancelling it: a job made by hand and imported without vx's labels is
 * not vx's to stop unless its declaration said onRemove: cancel. A run vx
 * started carries this stack's labels: were it forgotten, the next plan
 * would cancel it as untracked, so it is cancelled whatever onRemove says.
 */
static int removal_forgets(const struct plan_record *rec)
{
	return rec->unlabelled_import && rec->on_remove != PLAN_ON_REMOVE_CANCEL;
}

/* An action for rec, no longer declared, with what each such action shows; NULL on OOM. */
static struct plan_action *removed_action(struct builder *b, enum plan_op k, const struct plan_record *rec,
					  const char *state)
{
	struct plan_action *a = job_add_action(b, k, rec->address);
	struct job_action *ja = job_action_mut(a);

	if (!a)
		return NULL;
	ja->record = rec;
	job_set_str(b, &ja->old_hash, rec->spec_hash);
	job_set_str(b, &ja->live_state, state);
	if (rec->current)
		job_set_str(b, &a->region, rec->current->region);
	return a;
}

static void plan_removed(struct builder *b, const struct plan_record *rec)
{
	const struct plan_run *cur = rec->current;
	const struct live_job *lj = NULL;
	const char *state = cur ? cur->state : NULL;
	struct plan_action *a;
	int running;

	if (cur && b->in->live) {
		lj = live_by_name(b, cur->name);
		state = lj ? lj->state : NULL;
	}
	running = cur && state && job_state_is_active(state) && strcmp(state, "JOB_STATE_CANCELLING") != 0;
	if (running && removal_forgets(rec)) {
		if (!(a = removed_action(b, PLAN_FORGET, rec, state)))
			return;
		job_set_fmt(b, &a->reason, rec->on_remove == PLAN_ON_REMOVE_FORGET
			? vx_asprintf("no longer declared; run %s is %s: onRemove is forget, so vx forgets it "
				      "and leaves it running", cur->name, job_state_short(state))
			: vx_asprintf("no longer declared; run %s is %s: it was imported (vx import) without "
				      "vx's labels, so vx forgets it and leaves it running (onRemove: cancel "
				      "cancels it)", cur->name, job_state_short(state)));
		return;
	}
	if (running) {
		if (rec->protect)
			vx_diags_add(&b->p->errors, NULL, 0, 0,
				     "%s is protected (protect: true): it is no longer declared but its run %s "
				     "is %s; cancelling it is refused", rec->address, cur->name,
				     job_state_short(state));
		if (!(a = removed_action(b, PLAN_CANCEL, rec, state)))
			return;
		job_set_str(b, &job_action_mut(a)->cancel_name, cur->name);
		job_set_fmt(b, &a->reason, vx_asprintf("no longer declared; run %s is %s%s", cur->name,
						   job_state_short(state),
						   rec->on_remove == PLAN_ON_REMOVE_FORGET
						   ? " (onRemove: forget leaves only a job imported without vx's "
						     "labels: this run carries this stack's labels, and vx cancels "
						     "every such job no declaration accounts for)" : ""));
		return;
	}
	if (cur && state && !strcmp(state, "JOB_STATE_CANCELLING")) {
		/* Forgetting it now would lose how it ends: wait until it has. */
		if (!(a = removed_action(b, PLAN_NOOP, rec, state)))
			return;
		job_set_fmt(b, &a->reason, vx_asprintf("no longer declared; run %s is cancelling: forgotten "
						   "once it has ended", cur->name));
		return;
	}
	a = job_add_action(b, PLAN_FORGET, rec->address);
	if (!a)
		return;
	job_action_mut(a)->record = rec;
	job_set_str(b, &job_action_mut(a)->old_hash, rec->spec_hash);
	job_set_str(b, &job_action_mut(a)->live_state, state);
	if (cur)
		job_set_fmt(b, &a->reason, vx_asprintf("no longer declared; last run %s %s (history stays in git)",
						   cur->name, lj || !b->in->live ? job_state_short(state)
						   : "vanished"));
	else
		job_set_str(b, &a->reason, "no longer declared (history stays in git)");
}

/* Adds key (borrowed) unless it is there: the first of equal keys is the one found. */
static int index_add(struct vx_hashmap *m, const char *key, size_t value)
{
	return vx_hashmap_add(m, key, strlen(key), value, NULL) < 0 ? VX_ENOMEM : 0;
}

static int build_indexes(struct builder *b)
{
	const struct plan_input *in = b->in;
	size_t nlive = in->live ? in->live->n : 0;
	int rc = 0;

	b->by_job = calloc(nlive + 1, sizeof(*b->by_job));
	if (!b->by_job)
		return VX_ENOMEM;
	for (size_t i = 0; i < nlive && rc == 0; i++) {
		const struct live_job *j = &in->live->items[i];

		if (j->name)
			rc = index_add(&b->by_name, j->name, i);
		if (live_job_label(j, "vx-job"))
			b->by_job[b->nby_job++] = j;
	}
	if (rc == 0 && sort_by_job(b) < 0)
		rc = VX_ENOMEM;
	for (size_t i = 0; i < in->nrecords && rc == 0; i++) {
		const struct plan_record *r = &in->records[i];

		rc = index_add(&b->records, r->address, i);
		if (rc == 0 && r->current && r->current->name)
			rc = index_add(&b->known, r->current->name, 0);
		for (size_t k = 0; k < r->nknown && rc == 0; k++)
			rc = index_add(&b->known, r->known[k], 0);
	}
	for (size_t i = 0; i < in->ndecls && rc == 0; i++)
		rc = index_add(&b->decls, in->decls[i].address, i);
	return rc;
}

static void free_indexes(struct builder *b)
{
	vx_hashmap_release(&b->by_name);
	vx_hashmap_release(&b->records);
	vx_hashmap_release(&b->decls);
	vx_hashmap_release(&b->known);
	free(b->by_job);
	free(b->created);
}

int plan_build(struct plan *out, const struct plan_input *in, struct vx_err *err)
{
	struct builder b;

	memset(&b, 0, sizeof(b));
	b.p = out;
	b.in = in;
	memset(out, 0, sizeof(*out));
	if (build_indexes(&b) < 0)
		b.oom = 1;
	for (size_t i = 0; i < in->ndecls && !b.oom; i++) {
		const struct plan_decl *d = &in->decls[i];

		if (targeted(in, d->address)) {
			const struct plan_record *rec = find_record(&b, d->address);
			size_t first = out->n;

			plan_declared(&b, d, rec);
			settings_update(&b, d, rec, first);
			for (size_t k = first; k < out->n; k++)
				job_note_budgets(&out->actions[k], d, rec);
		}
	}
	for (size_t i = 0; i < in->nrecords && !b.oom; i++) {
		const struct plan_record *r = &in->records[i];

		if (!find_decl(&b, r->address) && targeted(in, r->address))
			plan_removed(&b, r);
	}
	if (!b.oom)
		job_check_other_lineage(&b);
	if (!b.oom)
		job_check_released(&b);
	if (!b.oom)
		job_plan_untracked(&b);
	free_indexes(&b);
	if (b.oom) {
		plan_release(out);
		return vx_err_set(err, VX_ENOMEM, "planning: out of memory");
	}
	plan_sort(out);
	return 0;
}
