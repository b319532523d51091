#include "reconcile/plan.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reconcile/failure.h"
#include "reconcile/provider.h"
#include "reconcile/spec.h"
#include "util/buf.h"
#include "util/banned.h"

const char *plan_kind_name(enum plan_kind k)
{
	static const char *const names[PLAN_KIND_COUNT] = {
		"noop", "create", "adopt", "replace", "rerun", "resubmit", "cancel", "forget",
	};
	return (unsigned)k < PLAN_KIND_COUNT ? names[k] : "?";
}

const char *plan_kind_symbol(enum plan_kind k)
{
	static const char *const symbols[PLAN_KIND_COUNT] = {
		" ", "+", "~", "-/+", "\u21bb", "\u21bb", "-", "-",
	};
	return (unsigned)k < PLAN_KIND_COUNT ? symbols[k] : "?";
}

void plan_short_hash(char out[13], const char *hash)
{
	size_t i;

	for (i = 0; i < 12 && hash && hash[i]; i++)
		out[i] = hash[i];
	out[i] = '\0';
}

int plan_has_changes(const struct plan *p)
{
	return p->n > p->counts[PLAN_NOOP];
}

static void action_release(struct plan_action *a)
{
	free(a->address);
	free(a->reason);
	free(a->drift);
	free(a->shape);
	free(a->old_hash);
	free(a->new_hash);
	free(a->failure_class);
	free(a->cancel_name);
	free(a->adopt_name);
	free(a->region);
	free(a->live_state);
}

void plan_release(struct plan *p)
{
	for (size_t i = 0; i < p->n; i++)
		action_release(&p->actions[i]);
	free(p->actions);
	p->actions = NULL;
	p->n = 0;
	memset(p->counts, 0, sizeof(p->counts));
	p->drifts = 0;
	vx_diags_release(&p->errors);
}

static int in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s, list[i]))
			return 1;
	return 0;
}

/* "10:02Z", or "2026-11-20 10:02Z" when not today, from epoch milliseconds. */
static void fmt_when(char *buf, size_t len, int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (ms <= 0 || !gmtime_r(&t, &tm)) {
		snprintf(buf, len, "an unknown time");
		return;
	}
	strftime(buf, len, "%Y-%m-%d %H:%MZ", &tm);
}

/* Looks up a live job by resource name. */
static const struct live_job *live_by_name(const struct live_jobs *live, const char *name)
{
	if (!live || !name)
		return NULL;
	for (size_t i = 0; i < live->n; i++)
		if (live->items[i].name && !strcmp(live->items[i].name, name))
			return &live->items[i];
	return NULL;
}

static int label_is(const struct live_job *j, const char *key, const char *want)
{
	const char *v = live_job_label(j, key);

	return v && !strcmp(v, want);
}

/*
 * The newest live job carrying exactly the labels of run (spec, run,
 * attempt) of job name, that is not one of the record's known runs.
 */
static const struct live_job *live_for_run(const struct plan_input *in, const char *name,
					   const char *hash, int64_t run, int64_t attempt,
					   const struct plan_record *rec)
{
	const struct live_job *best = NULL;
	char shorth[13], runs[24], atts[24];

	if (!in->live)
		return NULL;
	plan_short_hash(shorth, hash);
	snprintf(runs, sizeof(runs), "%" PRId64, run);
	snprintf(atts, sizeof(atts), "%" PRId64, attempt);
	for (size_t i = 0; i < in->live->n; i++) {
		const struct live_job *j = &in->live->items[i];

		if (!label_is(j, "vx-stack", in->stack) || !label_is(j, "vx-job", name) ||
		    !label_is(j, "vx-spec", shorth) || !label_is(j, "vx-run", runs) ||
		    !label_is(j, "vx-attempt", atts))
			continue;
		if (rec && rec->current && rec->current->name && j->name &&
		    !strcmp(rec->current->name, j->name))
			continue;
		if (rec && j->name && in_list(j->name, rec->known, rec->nknown))
			continue;
		if (!best || j->create_ms > best->create_ms)
			best = j;
	}
	return best;
}

struct builder {
	struct plan *p;
	const struct plan_input *in;
	int oom;
};

static struct plan_action *add_action(struct builder *b, enum plan_kind kind, const char *address)
{
	struct plan_action *a, *arr;

	arr = realloc(b->p->actions, (b->p->n + 1) * sizeof(*arr));
	if (!arr) {
		b->oom = 1;
		return NULL;
	}
	b->p->actions = arr;
	a = &arr[b->p->n++];
	memset(a, 0, sizeof(*a));
	a->kind = kind;
	a->address = strdup(address);
	if (!a->address)
		b->oom = 1;
	b->p->counts[kind]++;
	return a;
}

static void set_str(struct builder *b, char **dst, const char *src)
{
	free(*dst);
	*dst = NULL;
	if (src && !(*dst = strdup(src)))
		b->oom = 1;
}

static void set_fmt(struct builder *b, char **dst, char *formatted)
{
	free(*dst);
	*dst = formatted;
	if (!formatted)
		b->oom = 1;
}

static void fill_decl(struct builder *b, struct plan_action *a, const struct plan_decl *d)
{
	a->decl = d;
	a->max_attempts = d->max_attempts;
	set_str(b, &a->shape, d->shape);
	set_str(b, &a->new_hash, d->spec_hash);
	set_str(b, &a->region, d->region);
}

static const struct plan_record *find_record(const struct plan_input *in, const char *address)
{
	for (size_t i = 0; i < in->nrecords; i++)
		if (!strcmp(in->records[i].address, address))
			return &in->records[i];
	return NULL;
}

static const struct plan_decl *find_decl(const struct plan_input *in, const char *address)
{
	for (size_t i = 0; i < in->ndecls; i++)
		if (!strcmp(in->decls[i].address, address))
			return &in->decls[i];
	return NULL;
}

static int targeted(const struct plan_input *in, const char *address)
{
	return in->ntargets == 0 || in_list(address, in->targets, in->ntargets);
}

/*
 * A new run is about to be planned (create, rerun, resubmit, replace): if a
 * live job already has its labels, adopt it instead. Returns 1 when adopted.
 */
static int maybe_adopt(struct builder *b, const struct plan_decl *d, const struct plan_record *rec,
		       int64_t attempt, const char *why, const char *cancel_name)
{
	const struct live_job *j = live_for_run(b->in, d->name, d->spec_hash, d->run, attempt, rec);
	struct plan_action *a;

	if (!j)
		return 0;
	a = add_action(b, PLAN_ADOPT, d->address);
	if (!a)
		return 1;
	fill_decl(b, a, d);
	a->record = rec;
	a->run = d->run;
	a->attempt = attempt;
	set_str(b, &a->adopt_name, j->name);
	set_str(b, &a->live_state, j->state);
	set_str(b, &a->cancel_name, cancel_name);
	if (rec && rec->current)
		set_str(b, &a->old_hash, rec->spec_hash);
	set_fmt(b, &a->reason, vx_asprintf("%s; a live job with its labels already exists (%s, %s): "
					   "an earlier apply created it", why, j->name,
					   job_state_short(j->state)));
	return 1;
}

/* Whether class is listed in the declaration's resubmit.on. */
static int resubmits(const struct plan_decl *d, const char *cls)
{
	return cls && in_list(cls, d->resubmit_on, d->nresubmit_on);
}

static void plan_declared(struct builder *b, const struct plan_decl *d, const struct plan_record *rec)
{
	const struct plan_run *cur = rec ? rec->current : NULL;
	const struct live_job *lj = NULL;
	const char *state = NULL, *msg = NULL, *cls;
	int code = 0, vanished = 0, changed, forced;
	struct plan_action *a;
	char when[40];

	if (!cur) {
		if (maybe_adopt(b, d, rec, 1, "new job", NULL))
			return;
		a = add_action(b, PLAN_CREATE, d->address);
		if (!a)
			return;
		fill_decl(b, a, d);
		a->record = rec;
		a->run = d->run;
		a->attempt = 1;
		set_str(b, &a->reason, rec ? "no current run in state" : "new job");
		return;
	}

	/* Where the current run stands: live when refreshing, else as last seen. */
	if (b->in->live) {
		lj = live_by_name(b->in->live, cur->name);
		if (lj) {
			state = lj->state;
			code = lj->error_code;
			msg = lj->error_message;
		} else {
			vanished = 1;
		}
	} else {
		state = cur->state;
		code = cur->error_code;
		msg = cur->error_message;
	}

	forced = in_list(d->address, b->in->replaces, b->in->nreplaces);
	changed = strcmp(rec->spec_hash ? rec->spec_hash : "", d->spec_hash) != 0 || rec->run != d->run;

	if (vanished) {
		/* A run we launched is gone from the API: deleted outside vx. */
		if (cur->state && !strcmp(cur->state, "JOB_STATE_SUCCEEDED") && !changed && !forced) {
			a = add_action(b, PLAN_NOOP, d->address);
			if (!a)
				return;
			fill_decl(b, a, d);
			a->record = rec;
			set_str(b, &a->old_hash, rec->spec_hash);
			set_fmt(b, &a->drift, vx_asprintf("run %s succeeded and has since been deleted", cur->name));
			b->p->drifts++;
			return;
		}
		state = "JOB_STATE_CANCELLED";
		code = 1;
		msg = "deleted outside vx";
	}

	if (changed || forced) {
		char *why = NULL;

		if (forced && !changed)
			why = vx_asprintf("replacement requested (-replace %s)", d->address);
		else if (rec->run != d->run && strcmp(rec->spec_hash ? rec->spec_hash : "", d->spec_hash) == 0)
			why = vx_asprintf("run bumped %" PRId64 " -> %" PRId64, rec->run, d->run);
		else if (d->spec_json && rec->spec_json) {
			char *paths = spec_diff_paths(rec->spec_json, d->spec_json);

			why = paths && *paths ? vx_asprintf("spec changed: %s", paths)
					      : vx_asprintf("spec changed");
			free(paths);
		} else
			why = vx_asprintf("spec changed");
		if (!why) {
			b->oom = 1;
			return;
		}
		if (state && job_state_is_active(state) && strcmp(state, "JOB_STATE_CANCELLING") != 0) {
			if (d->on_change != PLAN_ON_CHANGE_REPLACE && !forced) {
				a = add_action(b, PLAN_NOOP, d->address);
				if (a) {
					fill_decl(b, a, d);
					a->record = rec;
					set_str(b, &a->old_hash, rec->spec_hash);
					set_str(b, &a->live_state, state);
					set_fmt(b, &a->reason, vx_asprintf(
						"%s; the current run %s is %s and onChange is %s",
						why, cur->name, job_state_short(state),
						d->on_change == PLAN_ON_CHANGE_IGNORE ? "ignore: the change waits"
						: "after-finish: a new run starts when it ends"));
				}
				free(why);
				return;
			}
			if (d->protect) {
				vx_diags_add(&b->p->errors, NULL, 0, 0,
					     "%s is protected (protect: true): %s would cancel its active run %s; "
					     "set protect: false, or onChange: after-finish",
					     d->address, why, cur->name);
			}
			if (!maybe_adopt(b, d, rec, 1, why, cur->name)) {
				a = add_action(b, PLAN_REPLACE, d->address);
				if (a) {
					fill_decl(b, a, d);
					a->record = rec;
					a->run = d->run;
					a->attempt = 1;
					set_str(b, &a->old_hash, rec->spec_hash);
					set_str(b, &a->cancel_name, cur->name);
					set_str(b, &a->live_state, state);
					set_fmt(b, &a->reason, vx_asprintf("%s while %s", why, job_state_short(state)));
				}
			}
			free(why);
			return;
		}
		/* Finished (or cancelling): a new run. */
		if (!maybe_adopt(b, d, rec, 1, why, NULL)) {
			a = add_action(b, PLAN_RERUN, d->address);
			if (a) {
				fill_decl(b, a, d);
				a->record = rec;
				a->run = d->run;
				a->attempt = 1;
				set_str(b, &a->old_hash, rec->spec_hash);
				set_str(b, &a->live_state, state);
				set_fmt(b, &a->reason, vx_asprintf("%s after the last run %s", why,
								   vanished ? "vanished" : job_state_short(state)));
			}
		}
		free(why);
		return;
	}

	/* Same spec and run: active or succeeded is a noop; a failure may resubmit. */
	cls = failure_classify(state, code, msg, cur->cancelled_by_vx);
	if (!cls) {
		a = add_action(b, PLAN_NOOP, d->address);
		if (!a)
			return;
		fill_decl(b, a, d);
		a->record = rec;
		set_str(b, &a->old_hash, rec->spec_hash);
		set_str(b, &a->live_state, state);
		return;
	}
	fmt_when(when, sizeof(when), lj && lj->end_ms ? lj->end_ms : cur->end_ms);
	if (resubmits(d, cls) && cur->attempt < d->max_attempts) {
		if (maybe_adopt(b, d, rec, cur->attempt + 1, "resubmit", NULL))
			return;
		a = add_action(b, PLAN_RESUBMIT, d->address);
		if (!a)
			return;
		fill_decl(b, a, d);
		a->record = rec;
		a->run = d->run;
		a->attempt = cur->attempt + 1;
		set_str(b, &a->old_hash, rec->spec_hash);
		set_str(b, &a->failure_class, cls);
		set_str(b, &a->live_state, state);
		set_fmt(b, &a->reason, vx_asprintf("attempt %" PRId64 "/%" PRId64 " after %s at %s",
						   cur->attempt + 1, d->max_attempts, cls, when));
	} else {
		a = add_action(b, PLAN_NOOP, d->address);
		if (!a)
			return;
		fill_decl(b, a, d);
		a->record = rec;
		set_str(b, &a->old_hash, rec->spec_hash);
		set_str(b, &a->failure_class, cls);
		set_str(b, &a->live_state, state);
		if (resubmits(d, cls))
			set_fmt(b, &a->reason, vx_asprintf("failed (%s at %s); resubmit budget exhausted "
							   "(%" PRId64 "/%" PRId64 " attempts)",
							   cls, when, cur->attempt, d->max_attempts));
		else
			set_fmt(b, &a->reason, vx_asprintf("failed (%s at %s); not resubmitted: %s is not in resubmit.on",
							   cls, when, cls));
	}
	if (!strcmp(cls, "cancelled-outside")) {
		set_fmt(b, &a->drift, vx_asprintf(vanished ? "run %s was deleted outside vx"
						  : "run %s was cancelled outside vx", cur->name));
		b->p->drifts++;
	}
}

static void plan_removed(struct builder *b, const struct plan_record *rec)
{
	const struct plan_run *cur = rec->current;
	const struct live_job *lj = NULL;
	const char *state = cur ? cur->state : NULL;
	struct plan_action *a;

	if (cur && b->in->live) {
		lj = live_by_name(b->in->live, cur->name);
		state = lj ? lj->state : NULL;
	}
	if (cur && state && job_state_is_active(state) && strcmp(state, "JOB_STATE_CANCELLING") != 0) {
		if (rec->protect)
			vx_diags_add(&b->p->errors, NULL, 0, 0,
				     "%s is protected (protect: true): it is no longer declared but its run %s "
				     "is %s; cancelling it is refused", rec->address, cur->name,
				     job_state_short(state));
		a = add_action(b, PLAN_CANCEL, rec->address);
		if (!a)
			return;
		a->record = rec;
		set_str(b, &a->cancel_name, cur->name);
		set_str(b, &a->old_hash, rec->spec_hash);
		set_str(b, &a->live_state, state);
		set_str(b, &a->region, cur->region);
		set_fmt(b, &a->reason, vx_asprintf("no longer declared; run %s is %s", cur->name,
						   job_state_short(state)));
		return;
	}
	a = add_action(b, PLAN_FORGET, rec->address);
	if (!a)
		return;
	a->record = rec;
	set_str(b, &a->old_hash, rec->spec_hash);
	set_str(b, &a->live_state, state);
	if (cur)
		set_fmt(b, &a->reason, vx_asprintf("no longer declared; last run %s %s (history stays in git)",
						   cur->name, lj || !b->in->live ? job_state_short(state)
						   : "vanished"));
	else
		set_str(b, &a->reason, "no longer declared (history stays in git)");
}

/* Whether a live job is one vx knows: a current or past run in the state, or adopted now. */
static int live_known(const struct builder *b, const struct live_job *j)
{
	for (size_t i = 0; i < b->in->nrecords; i++) {
		const struct plan_record *r = &b->in->records[i];

		if (r->current && r->current->name && !strcmp(r->current->name, j->name))
			return 1;
		if (in_list(j->name, r->known, r->nknown))
			return 1;
	}
	for (size_t i = 0; i < b->p->n; i++)
		if (b->p->actions[i].adopt_name && !strcmp(b->p->actions[i].adopt_name, j->name))
			return 1;
	return 0;
}

/* Active jobs labelled for this stack that nothing accounts for: a crashed
 * apply's leftovers or duplicates. They cost money: the plan cancels them. */
static void plan_untracked(struct builder *b)
{
	if (!b->in->live || b->in->ntargets)
		return;
	for (size_t i = 0; i < b->in->live->n && !b->oom; i++) {
		const struct live_job *j = &b->in->live->items[i];
		const char *job = live_job_label(j, "vx-job");
		struct plan_action *a;
		char *addr;

		if (!j->name || !label_is(j, "vx-stack", b->in->stack) || live_known(b, j))
			continue;
		if (!job_state_is_active(j->state) || !strcmp(j->state, "JOB_STATE_CANCELLING"))
			continue;
		addr = vx_asprintf("job.%s", job ? job : "?");
		if (!addr) {
			b->oom = 1;
			return;
		}
		a = add_action(b, PLAN_CANCEL, addr);
		free(addr);
		if (!a)
			return;
		set_str(b, &a->cancel_name, j->name);
		set_str(b, &a->live_state, j->state);
		set_str(b, &a->region, j->region);
		set_fmt(b, &a->reason, vx_asprintf("untracked live job %s (%s) carries this stack's labels "
						   "but no state record or declaration accounts for it",
						   j->name, job_state_short(j->state)));
		set_fmt(b, &a->drift, vx_asprintf("untracked job %s", j->name));
		b->p->drifts++;
	}
}

static int cmp_action(const void *x, const void *y)
{
	const struct plan_action *a = x, *b = y;
	int c = strcmp(a->address, b->address);

	if (c)
		return c;
	return (int)a->kind - (int)b->kind;
}

int plan_build(struct plan *out, const struct plan_input *in, struct vx_err *err)
{
	struct builder b = { out, in, 0 };

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < in->ndecls && !b.oom; i++) {
		const struct plan_decl *d = &in->decls[i];

		if (targeted(in, d->address))
			plan_declared(&b, d, find_record(in, d->address));
	}
	for (size_t i = 0; i < in->nrecords && !b.oom; i++) {
		const struct plan_record *r = &in->records[i];

		if (!find_decl(in, r->address) && targeted(in, r->address))
			plan_removed(&b, r);
	}
	if (!b.oom)
		plan_untracked(&b);
	if (b.oom) {
		plan_release(out);
		return vx_err_set(err, VX_ENOMEM, "planning: out of memory");
	}
	if (out->n > 1)
		qsort(out->actions, out->n, sizeof(*out->actions), cmp_action);
	return 0;
}
