#include "reconcile/plan.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reconcile/failure.h"
#include "reconcile/kind.h"
#include "reconcile/provider.h"
#include "reconcile/runlabel.h"
#include "reconcile/spec.h"
#include "util/buf.h"
#include "util/banned.h"

const char *plan_kind_name(enum plan_kind k)
{
	static const char *const names[PLAN_KIND_COUNT] = {
		"noop", "create", "adopt", "replace", "rerun", "resubmit", "cancel", "forget", "update",
		"delete", "pending", "abandon",
	};
	return (unsigned)k < PLAN_KIND_COUNT ? names[k] : "?";
}

const char *plan_kind_symbol(enum plan_kind k)
{
	static const char *const symbols[PLAN_KIND_COUNT] = {
		" ", "+", "~", "-/+", "\u21bb", "\u21bb", "-", "-", "~", "-", " ", "-",
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

void plan_lineage_label(char out[13], const char *lineage)
{
	size_t k = 0;

	for (size_t i = 0; k < 12 && lineage && lineage[i]; i++)
		if (lineage[i] != '-')
			out[k++] = lineage[i];
	out[k] = '\0';
}

int plan_resource_place(const char *name, char *project, char *region, size_t len)
{
	const char *p, *slash, *r, *rs;

	if (!name || strncmp(name, "projects/", 9) != 0)
		return -1;
	p = name + 9;
	slash = strchr(p, '/');
	if (!slash || slash == p || strncmp(slash, "/locations/", 11) != 0)
		return -1;
	r = slash + 11;
	rs = strchr(r, '/');
	if (!rs || rs == r || (size_t)(slash - p) >= len || (size_t)(rs - r) >= len)
		return -1;
	memcpy(project, p, (size_t)(slash - p));
	project[slash - p] = '\0';
	memcpy(region, r, (size_t)(rs - r));
	region[rs - r] = '\0';
	return 0;
}

int plan_has_changes(const struct plan *p)
{
	return p->n > p->counts[PLAN_NOOP] + p->counts[PLAN_PENDING];
}

struct plan_action *plan_add_action(struct plan *p, enum plan_kind kind, const struct kind *k,
				    const char *address)
{
	struct plan_action *a, *arr = realloc(p->actions, (p->n + 1) * sizeof(*arr));

	if (!arr)
		return NULL;
	p->actions = arr;
	a = &arr[p->n];
	memset(a, 0, sizeof(*a));
	if (!(a->address = strdup(address)))
		return NULL;
	a->kind = kind;
	a->kind_of = k;
	p->n++;
	p->counts[kind]++;
	return a;
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
	free(a->error_message);
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
	vx_diags_release(&p->warnings);
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

/*
 * Indexes built once per plan, so every lookup is a binary search: a plan
 * over 10,000 jobs would otherwise spend seconds in nested scans.
 */
struct builder {
	struct plan *p;
	const struct plan_input *in;
	int oom;
	const struct live_job **by_name;  /* live jobs sorted by resource name */
	const struct live_job **by_job;   /* live jobs of this stack sorted by their vx-job label */
	size_t nby_name, nby_job;
	const struct plan_record **records; /* sorted by address */
	const struct plan_decl **decls;     /* sorted by address */
	const char **known;                 /* every run the state knows, sorted */
	size_t nknown;
};

static int cmp_live_name(const void *a, const void *b)
{
	return strcmp((*(const struct live_job *const *)a)->name, (*(const struct live_job *const *)b)->name);
}

static const char *vx_job_of(const struct live_job *j)
{
	const char *v = live_job_label(j, "vx-job");

	return v ? v : "";
}

static int cmp_live_job(const void *a, const void *b)
{
	return strcmp(vx_job_of(*(const struct live_job *const *)a), vx_job_of(*(const struct live_job *const *)b));
}

static int cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int label_is(const struct live_job *j, const char *key, const char *want)
{
	const char *v = live_job_label(j, key);

	return v && !strcmp(v, want);
}

/* Looks up a live job by resource name. */
static const struct live_job *live_by_name(const struct builder *b, const char *name)
{
	size_t lo = 0, hi = b->nby_name;

	if (!name)
		return NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(b->by_name[mid]->name, name);

		if (c == 0)
			return b->by_name[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The first index in by_job whose vx-job label is >= name. */
static size_t by_job_lower(const struct builder *b, const char *name)
{
	size_t lo = 0, hi = b->nby_job;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(vx_job_of(b->by_job[mid]), name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int is_known(const struct builder *b, const char *name)
{
	return name && bsearch(&name, b->known, b->nknown, sizeof(*b->known), cmp_cstr) != NULL;
}

/*
 * Whether vx can prove a live job is this stack's: the state knows it by
 * name, or it carries this state's identity (vx-lineage). A job with the
 * stack's name alone may be another repository's that chose the same name.
 */
static int owned(const struct builder *b, const struct live_job *j)
{
	return is_known(b, j->name) ||
	       (b->in->lineage && *b->in->lineage && label_is(j, "vx-lineage", b->in->lineage));
}

/*
 * The newest live job carrying exactly the labels of run (spec, run,
 * attempt) of job name, that is not one of the record's known runs.
 */
static const struct live_job *live_for_run(struct builder *b, const char *name,
					   const char *hash, int64_t run, int64_t attempt,
					   const struct plan_record *rec)
{
	const struct plan_input *in = b->in;
	const struct live_job *best = NULL;
	struct run_id id = { in->stack, in->lineage, name, hash, run, attempt };
	struct vx_label *want = NULL;
	size_t nwant = 0;

	if (!in->live)
		return NULL;
	if (runlabel_build(&want, &nwant, &id, NULL, 0) < 0) {
		b->oom = 1;
		return NULL;
	}
	for (size_t i = by_job_lower(b, name); i < b->nby_job && !strcmp(vx_job_of(b->by_job[i]), name); i++) {
		const struct live_job *j = b->by_job[i];

		/* The lineage is proved by owned(): the state may know the job by name. */
		if (!runlabel_match(j->labels, j->nlabels, want, nwant, RUNLABEL_ALL & ~RUNLABEL_LINEAGE) ||
		    !owned(b, j))
			continue;
		if (rec && rec->current && rec->current->name && j->name &&
		    !strcmp(rec->current->name, j->name))
			continue;
		if (rec && j->name && in_list(j->name, rec->known, rec->nknown))
			continue;
		if (!best || j->create_ms > best->create_ms)
			best = j;
	}
	vx_labels_free(want, nwant);
	return best;
}


static struct plan_action *add_action(struct builder *b, enum plan_kind kind, const char *address)
{
	struct plan_action *a = plan_add_action(b->p, kind, &kind_job, address);

	if (!a)
		b->oom = 1;
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

/* Both plan_record and plan_decl start with `const char *address`. */
static int cmp_addr(const void *a, const void *b)
{
	return strcmp(**(const char *const *const *)a, **(const char *const *const *)b);
}

static const struct plan_record *find_record(const struct builder *b, const char *address)
{
	const char *const *key = &address;
	const struct plan_record *const *r = bsearch(&key, b->records, b->in->nrecords,
						     sizeof(*b->records), cmp_addr);

	return r ? *r : NULL;
}

static const struct plan_decl *find_decl(const struct builder *b, const char *address)
{
	const char *const *key = &address;
	const struct plan_decl *const *d = bsearch(&key, b->decls, b->in->ndecls, sizeof(*b->decls), cmp_addr);

	return d ? *d : NULL;
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
	const struct live_job *j = live_for_run(b, d->name, d->spec_hash, d->run, attempt, rec);
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
	a->adopt_create_ms = j->create_ms;
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

static void set_error(struct builder *b, struct plan_action *a, int code, const char *msg)
{
	a->error_code = code;
	set_str(b, &a->error_message, msg);
}

/*
 * Whether the current run lives somewhere other than where the job is now
 * declared: the Stack's project or the job's region changed. A run of an
 * older state has no project recorded; it is taken to be in the declared one.
 */
static int run_moved(const struct plan_run *cur, const struct plan_decl *d)
{
	if (cur->project && d->project && strcmp(cur->project, d->project) != 0)
		return 1;
	return cur->region && d->region && strcmp(cur->region, d->region) != 0;
}

static void plan_declared(struct builder *b, const struct plan_decl *d, const struct plan_record *rec)
{
	const struct plan_run *cur = rec ? rec->current : NULL;
	const struct live_job *lj = NULL;
	const char *state = NULL, *msg = NULL, *cls;
	int code = 0, vanished = 0, changed, forced, moved;
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
		lj = live_by_name(b, cur->name);
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
	moved = run_moved(cur, d);
	changed = strcmp(rec->spec_hash ? rec->spec_hash : "", d->spec_hash) != 0 || rec->run != d->run ||
		  moved;

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
		else if (moved)
			why = vx_asprintf("moved from %s/%s to %s/%s", cur->project ? cur->project : d->project,
					  cur->region ? cur->region : "?", d->project, d->region);
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
		set_error(b, a, vanished ? 0 : code, vanished ? NULL : msg);
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
		set_error(b, a, vanished ? 0 : code, vanished ? NULL : msg);
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

/*
 * Declaration-only settings take effect from the declaration at plan time;
 * the state keeps `protect` so that a job removed from the declaration stays
 * protected. When it differs, an otherwise unchanged job is an update: the
 * apply records the setting and starts no run.
 */
static void settings_update(struct builder *b, const struct plan_decl *d, const struct plan_record *rec,
			    size_t first)
{
	for (size_t i = first; rec && i < b->p->n && !b->oom; i++) {
		struct plan_action *a = &b->p->actions[i];
		char *why;

		if (a->kind != PLAN_NOOP || !a->decl || !rec->protect == !d->protect)
			continue;
		why = a->reason ? vx_asprintf("protect: %s -> %s; %s", rec->protect ? "true" : "false",
					      d->protect ? "true" : "false", a->reason)
				: vx_asprintf("protect: %s -> %s", rec->protect ? "true" : "false",
					      d->protect ? "true" : "false");
		set_fmt(b, &a->reason, why);
		b->p->counts[PLAN_NOOP]--;
		b->p->counts[PLAN_UPDATE]++;
		a->kind = PLAN_UPDATE;
	}
}

static void plan_removed(struct builder *b, const struct plan_record *rec)
{
	const struct plan_run *cur = rec->current;
	const struct live_job *lj = NULL;
	const char *state = cur ? cur->state : NULL;
	struct plan_action *a;

	if (cur && b->in->live) {
		lj = live_by_name(b, cur->name);
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
	if (cur && state && !strcmp(state, "JOB_STATE_CANCELLING")) {
		/* Forgetting it now would lose how it ends: wait until it has. */
		a = add_action(b, PLAN_NOOP, rec->address);
		if (!a)
			return;
		a->record = rec;
		set_str(b, &a->old_hash, rec->spec_hash);
		set_str(b, &a->live_state, state);
		set_str(b, &a->region, cur->region);
		set_fmt(b, &a->reason, vx_asprintf("no longer declared; run %s is cancelling: forgotten "
						   "once it has ended", cur->name));
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
static int live_known(const struct builder *b, const struct live_job *j, const char **adopted,
		      size_t nadopted)
{
	return is_known(b, j->name) ||
	       (nadopted && bsearch(&j->name, adopted, nadopted, sizeof(*adopted), cmp_cstr) != NULL);
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

	if (vx_diags_add(&b->p->warnings, NULL, 0, 0,
			 "job.%s: live job %s (%s) is labelled vx-stack=%s but %s%s%s; vx leaves it "
			 "alone. If another repository uses the stack name %s, rename one of the two "
			 "stacks; if it is a leftover of this one, cancel it with 'gcloud ai custom-jobs "
			 "cancel %s'", job ? job : "?", j->name, job_state_short(j->state), b->in->stack,
			 lin ? "belongs to another state (vx-lineage=" : "carries no state identity (vx-lineage)",
			 lin ? lin : "", lin ? ")" : "", b->in->stack, j->name) < 0)
		b->oom = 1;
}

/* Active jobs labelled for this stack and this state that nothing accounts
 * for: a crashed apply's leftovers or duplicates. They cost money: the plan
 * cancels them, and touches no record (the action has none). */
static void plan_untracked(struct builder *b)
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
		if (b->p->actions[i].adopt_name)
			adopted[nadopted++] = b->p->actions[i].adopt_name;
	qsort(adopted, nadopted, sizeof(*adopted), cmp_cstr);
	for (size_t i = 0; i < b->in->live->n && !b->oom; i++) {
		const struct live_job *j = &b->in->live->items[i];
		const char *job = live_job_label(j, "vx-job");
		struct plan_action *a;
		char *addr;

		if (!j->name || !label_is(j, "vx-stack", b->in->stack) || live_known(b, j, adopted, nadopted))
			continue;
		if (!job_state_is_active(j->state) || !strcmp(j->state, "JOB_STATE_CANCELLING"))
			continue;
		if (!owned(b, j)) {
			warn_foreign(b, j);
			continue;
		}
		addr = vx_asprintf("job.%s", job ? job : "?");
		if (!addr) {
			b->oom = 1;
			break;
		}
		a = add_action(b, PLAN_CANCEL, addr);
		free(addr);
		if (!a)
			break;
		set_str(b, &a->cancel_name, j->name);
		set_str(b, &a->live_state, j->state);
		set_str(b, &a->region, j->region);
		set_fmt(b, &a->reason, vx_asprintf("untracked live job %s (%s) carries this stack's labels "
						   "but no state record or declaration accounts for it",
						   j->name, job_state_short(j->state)));
		set_fmt(b, &a->drift, vx_asprintf("untracked job %s", j->name));
		b->p->drifts++;
	}
	free(adopted);
}

static int cmp_action(const void *x, const void *y)
{
	const struct plan_action *a = x, *b = y;
	int c = strcmp(a->address, b->address);

	if (c)
		return c;
	return (int)a->kind - (int)b->kind;
}

static int build_indexes(struct builder *b)
{
	const struct plan_input *in = b->in;
	size_t nlive = in->live ? in->live->n : 0, nknown = 0;

	for (size_t i = 0; i < in->nrecords; i++)
		nknown += in->records[i].nknown + 1;
	b->by_name = calloc(nlive + 1, sizeof(*b->by_name));
	b->by_job = calloc(nlive + 1, sizeof(*b->by_job));
	b->records = calloc(in->nrecords + 1, sizeof(*b->records));
	b->decls = calloc(in->ndecls + 1, sizeof(*b->decls));
	b->known = calloc(nknown + 1, sizeof(*b->known));
	if (!b->by_name || !b->by_job || !b->records || !b->decls || !b->known)
		return VX_ENOMEM;
	for (size_t i = 0; i < nlive; i++) {
		const struct live_job *j = &in->live->items[i];

		if (j->name)
			b->by_name[b->nby_name++] = j;
		if (live_job_label(j, "vx-job"))
			b->by_job[b->nby_job++] = j;
	}
	qsort(b->by_name, b->nby_name, sizeof(*b->by_name), cmp_live_name);
	qsort(b->by_job, b->nby_job, sizeof(*b->by_job), cmp_live_job);
	for (size_t i = 0; i < in->nrecords; i++) {
		const struct plan_record *r = &in->records[i];

		b->records[i] = r;
		if (r->current && r->current->name)
			b->known[b->nknown++] = r->current->name;
		for (size_t k = 0; k < r->nknown; k++)
			b->known[b->nknown++] = r->known[k];
	}
	for (size_t i = 0; i < in->ndecls; i++)
		b->decls[i] = &in->decls[i];
	qsort(b->records, in->nrecords, sizeof(*b->records), cmp_addr);
	qsort(b->decls, in->ndecls, sizeof(*b->decls), cmp_addr);
	qsort(b->known, b->nknown, sizeof(*b->known), cmp_cstr);
	return 0;
}

static void free_indexes(struct builder *b)
{
	free(b->by_name);
	free(b->by_job);
	free(b->records);
	free(b->decls);
	free(b->known);
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
		}
	}
	for (size_t i = 0; i < in->nrecords && !b.oom; i++) {
		const struct plan_record *r = &in->records[i];

		if (!find_decl(&b, r->address) && targeted(in, r->address))
			plan_removed(&b, r);
	}
	if (!b.oom)
		plan_untracked(&b);
	free_indexes(&b);
	if (b.oom) {
		plan_release(out);
		return vx_err_set(err, VX_ENOMEM, "planning: out of memory");
	}
	plan_sort(out);
	return 0;
}

int plan_merge(struct plan *into, struct plan *from)
{
	struct plan_action *arr;

	if (!from->n)
		goto diags;
	arr = realloc(into->actions, (into->n + from->n) * sizeof(*arr));
	if (!arr)
		return VX_ENOMEM;
	into->actions = arr;
	memcpy(&arr[into->n], from->actions, from->n * sizeof(*arr));
	into->n += from->n;
	for (int k = 0; k < PLAN_KIND_COUNT; k++)
		into->counts[k] += from->counts[k];
	free(from->actions);
	from->actions = NULL;
	from->n = 0;
	memset(from->counts, 0, sizeof(from->counts));
diags:
	into->drifts += from->drifts;
	from->drifts = 0;
	for (size_t i = 0; i < from->errors.n; i++)
		if (vx_diags_add(&into->errors, NULL, 0, 0, "%s", from->errors.items[i].msg) < 0)
			return VX_ENOMEM;
	for (size_t i = 0; i < from->warnings.n; i++)
		if (vx_diags_add(&into->warnings, NULL, 0, 0, "%s", from->warnings.items[i].msg) < 0)
			return VX_ENOMEM;
	return 0;
}

void plan_sort(struct plan *p)
{
	if (p->n > 1)
		qsort(p->actions, p->n, sizeof(*p->actions), cmp_action);
}
