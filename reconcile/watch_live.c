#include "reconcile/watch_live.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/provider_job.h"
#include "util/ctx.h"
#include "util/hashmap.h"
#include "util/banned.h"

/* FNV-1a over s and its terminating NUL (a NULL string hashes as one byte 0xff). */
static uint64_t fnv(uint64_t h, const char *s)
{
	return s ? vx_fnv1a64_add(h, s, strlen(s) + 1) : vx_fnv1a64_add(h, "\xff", 1);
}

static uint64_t fnv_int(uint64_t h, int64_t v)
{
	unsigned char b[8];

	/* Little-endian whatever the host, so the digest is the same everywhere. */
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)((uint64_t)v >> (8 * i));
	return vx_fnv1a64_add(h, b, sizeof(b));
}

/* The digest of js's jobs, or of its jobs that are not final only. */
static uint64_t digest_of(const struct live_jobs *js, int active_only)
{
	uint64_t sum = 0;
	int64_t n = 0;

	/* A sum of each job's hash: the same jobs in any order, the same digest. */
	for (size_t i = 0; i < js->n; i++) {
		const struct live_job *j = &js->items[i];
		uint64_t h = VX_FNV1A64_BASIS;

		if (active_only && job_state_is_terminal(j->state))
			continue;
		h = fnv(h, j->name);
		h = fnv(h, j->region);
		h = fnv(h, j->display_name);
		h = fnv(h, j->state);
		for (size_t k = 0; k < j->nlabels; k++) {
			h = fnv(h, j->labels[k].key);
			h = fnv(h, j->labels[k].value);
		}
		h = fnv_int(h, (int64_t)j->nlabels);
		h = fnv_int(h, j->create_ms);
		h = fnv_int(h, j->start_ms);
		h = fnv_int(h, j->end_ms);
		h = fnv_int(h, j->error_code);
		h = fnv(h, j->error_message);
		sum += h;
		n++;
	}
	return fnv_int(sum, n);
}

uint64_t watch_live_digest(const struct live_jobs *js)
{
	return digest_of(js, 0);
}

/* One (project, region) the refresh listed, with the final jobs of its last full list. */
struct place {
	char *project;
	char *region;
	char *stack;
	struct live_jobs kept;  /* final jobs: they never change */
	int64_t full_ms;        /* when the last full list ran (monotonic) */
	int fresh;              /* listed in full since the last invalidate */
	uint64_t sig;           /* watch_live_digest of the last active list */
	int has_sig;            /* sig is of an active list made since the last full list */
	struct live_jobs pre;   /* watch_live_idle's active list, for this cycle's refresh */
	int has_pre;
};

struct watch_live {
	/* first: watch_live_provider hands out &reader, wrapping the real provider
	 * (reader.inner): its operations but the list of jobs */
	struct provider reader;
	const struct vx_ctx *ctx;
	int64_t full_every_ms;
	/* The refresh lists its places side by side (reconcile/kind_job.c), one
	 * thread each: the table and the counts are shared, under mu; a place is
	 * its thread's alone, and never moves (a table of pointers). */
	pthread_mutex_t mu;
	struct place **places;
	size_t nplaces;
	char **expect;          /* names of the runs the state holds as not final */
	unsigned char *expect_seen; /* 1: found or read in this cycle */
	size_t nexpect;
	struct watch_live_stats stats;
};

static struct watch_live *of(struct provider *p)
{
	return (struct watch_live *)(void *)p;
}

/* The real provider (watch_live_set_real changes it). */
static struct provider *real_of(const struct watch_live *w)
{
	return w->reader.inner;
}

static void place_free(struct place *p)
{
	if (!p)
		return;
	free(p->project);
	free(p->region);
	free(p->stack);
	live_jobs_release(&p->kept);
	live_jobs_release(&p->pre);
	free(p);
}

static struct place *place_find_locked(struct watch_live *w, const char *project, const char *region,
				       const char *stack)
{
	struct place *p, **t;

	for (size_t i = 0; i < w->nplaces; i++) {
		p = w->places[i];
		if (!strcmp(p->project, project) && !strcmp(p->region, region) && !strcmp(p->stack, stack))
			return p;
	}
	if (!(t = realloc(w->places, (w->nplaces + 1) * sizeof(*t))))
		return NULL;
	w->places = t;
	if (!(p = calloc(1, sizeof(*p))))
		return NULL;
	if (!(p->project = strdup(project)) || !(p->region = strdup(region)) || !(p->stack = strdup(stack))) {
		place_free(p);
		return NULL;
	}
	w->places[w->nplaces++] = p;
	return p;
}

static struct place *place_get(struct watch_live *w, const char *project, const char *region,
			       const char *stack)
{
	struct place *p;

	pthread_mutex_lock(&w->mu);
	p = place_find_locked(w, project, region, stack);
	pthread_mutex_unlock(&w->mu);
	return p;
}

static void count(struct watch_live *w, size_t *what)
{
	pthread_mutex_lock(&w->mu);
	(*what)++;
	pthread_mutex_unlock(&w->mu);
}

static int find_job(const struct live_jobs *js, const char *name)
{
	for (size_t i = 0; i < js->n; i++)
		if (js->items[i].name && !strcmp(js->items[i].name, name))
			return 1;
	return 0;
}

/* The full list: answered as it is; its final jobs are kept for the next cycles. */
static int list_full(struct watch_live *w, struct place *pl, struct live_jobs *out, struct vx_err *err)
{
	struct live_jobs kept = { NULL, 0 };
	struct provider *real = real_of(w);
	int rc;

	count(w, &w->stats.full_lists);
	if ((rc = provider_job_list(real, pl->project, pl->region, pl->stack, out, err)) < 0)
		return rc;
	if (out->n && !(kept.items = calloc(out->n, sizeof(*kept.items))))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	for (size_t i = 0; i < out->n; i++) {
		if (!job_state_is_terminal(out->items[i].state))
			continue;
		if (live_job_copy(&kept.items[kept.n], &out->items[i]) < 0) {
			live_jobs_release(&kept);
			return vx_err_set(err, VX_ENOMEM, "out of memory");
		}
		kept.n++;
	}
	live_jobs_release(&pl->kept);
	pl->kept = kept;
	pl->full_ms = vx_mono_ms(w->ctx);
	pl->fresh = 1;
	/* What the next active list shows when nothing changed. */
	pl->sig = digest_of(out, 1);
	pl->has_sig = 1;
	return 0;
}

/* A job the state holds as running that the active list no longer shows: read it. */
static int read_ended(struct watch_live *w, struct place *pl, const char *name, struct live_jobs *out,
		      struct vx_err *err)
{
	struct live_job lj;
	struct provider *real = real_of(w);
	int rc;

	memset(&lj, 0, sizeof(lj));
	count(w, &w->stats.gets);
	rc = provider_job_get(real, name, &lj, NULL, err);
	if (rc == VX_ENOTFOUND) {
		/* Deleted: the plan sees it gone, as after a full list. */
		vx_err_release(err);
		return 0;
	}
	if (rc < 0)
		return rc;
	if (!lj.region)
		lj.region = strdup(pl->region);
	rc = live_jobs_push(out, &lj);
	if (rc == 0 && job_state_is_terminal(lj.state))
		rc = live_jobs_push(&pl->kept, &lj);
	live_job_release(&lj);
	return rc < 0 ? vx_err_set(err, VX_ENOMEM, "out of memory") : 0;
}

/*
 * Whether name may be a job of this place: projects/P/locations/R/... with
 * R the place's region and P its project, or a project number (Google's
 * answers name projects by number; which project a number is, only a get
 * tells, and jobs->get accepts either).
 */
static int in_place(const struct place *pl, const char *name)
{
	size_t np = strlen(pl->project), nr = strlen(pl->region), n = 0;
	const char *q;

	if (strncmp(name, "projects/", 9))
		return 0;
	q = name + 9;
	if (!strncmp(q, pl->project, np) && q[np] == '/')
		n = np;
	else
		while (q[n] >= '0' && q[n] <= '9')
			n++;
	if (!n || strncmp(q + n, "/locations/", 11))
		return 0;
	q += n + 11;
	return !strncmp(q, pl->region, nr) && q[nr] == '/';
}

/* The full list, the expected runs of the place all seen (it shows every job that still exists). */
static int full(struct watch_live *w, struct place *pl, struct live_jobs *out, struct vx_err *err)
{
	int rc;

	live_jobs_release(&pl->pre);
	pl->has_pre = 0;
	pl->has_sig = 0;
	rc = list_full(w, pl, out, err);
	for (size_t i = 0; rc == 0 && i < w->nexpect; i++)
		if (in_place(pl, w->expect[i]))
			w->expect_seen[i] = 1;
	return rc;
}

/* Jobs a page of the full list holds (the provider asks Google for 1,000). */
#define FULL_LIST_PAGE 1000

/*
 * Whether more runs the state holds as active left the active list than a
 * full list of the place has pages: a sweep's batch that ended together is
 * then read by one full list, not one GET each (100 GETs are 10 s of
 * Vertex's 600 requests a minute).
 */
static int ended_many(const struct watch_live *w, const struct place *pl, const struct live_jobs *active)
{
	size_t pages = (pl->kept.n + active->n) / FULL_LIST_PAGE + 1, missing = 0;

	for (size_t i = 0; i < w->nexpect && missing <= pages; i++)
		if (in_place(pl, w->expect[i]) && !w->expect_seen[i] && !find_job(active, w->expect[i]) &&
		    !find_job(&pl->kept, w->expect[i]))
			missing++;
	return missing > pages;
}

static int wl_list_jobs(struct provider *p, const char *project, const char *region, const char *stack,
			struct live_jobs *out, struct vx_err *err)
{
	struct watch_live *w = of(p);
	struct place *pl = place_get(w, project, region, stack);
	struct provider *real = real_of(w);
	struct live_jobs active = { NULL, 0 };
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (!pl)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	if (!pl->fresh || !PROVIDER_HAS(real, job, list_active) || !PROVIDER_HAS(real, job, get) ||
	    w->full_every_ms <= 0 || vx_mono_ms(w->ctx) - pl->full_ms >= w->full_every_ms)
		return full(w, pl, out, err);
	if (pl->has_pre) {
		/* Listed moments ago by watch_live_idle, in this cycle. */
		active = pl->pre;
		memset(&pl->pre, 0, sizeof(pl->pre));
		pl->has_pre = 0;
	} else {
		count(w, &w->stats.active_lists);
		if ((rc = provider_job_list_active(real, project, region, stack, &active, err)) < 0)
			goto fail;
	}
	if (ended_many(w, pl, &active)) {
		live_jobs_release(&active);
		return full(w, pl, out, err);
	}
	pl->sig = watch_live_digest(&active);
	pl->has_sig = 1;
	/* The kept final jobs, then what is active now; a name is in one of them only. */
	if (!(out->items = calloc(pl->kept.n + active.n + 1, sizeof(*out->items)))) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < pl->kept.n; i++) {
		if (find_job(&active, pl->kept.items[i].name))
			continue;
		if (live_job_copy(&out->items[out->n], &pl->kept.items[i]) < 0) {
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			goto fail;
		}
		out->n++;
	}
	if (active.n)
		memcpy(&out->items[out->n], active.items, active.n * sizeof(*active.items));
	out->n += active.n;
	free(active.items);
	active.items = NULL;
	active.n = 0;
	for (size_t i = 0; i < w->nexpect; i++) {
		if (!in_place(pl, w->expect[i]) || w->expect_seen[i])
			continue;
		if (!find_job(out, w->expect[i]) && (rc = read_ended(w, pl, w->expect[i], out, err)) < 0)
			goto fail;
		w->expect_seen[i] = 1;
	}
	return 0;
fail:
	live_jobs_release(&active);
	live_jobs_release(out);
	/* Whatever went wrong, the next cycle starts from a full list. */
	pl->fresh = 0;
	pl->has_sig = 0;
	return rc;
}

/* The reader's table of jobs: only the list it answers (the rest is real's). */
static const struct provider_job_ops wl_job_ops = { .list = wl_list_jobs };
static const struct provider_table wl_tables[] = { { &provider_kind_job, &wl_job_ops } };

/* Never called: watch_live_free frees the reader with the rest. */
static void wl_free(struct provider *p)
{
	(void)p;
}

int watch_live_new(struct watch_live **out, struct provider *real, const struct vx_ctx *ctx,
		   int64_t full_every_ms, struct vx_err *err)
{
	struct watch_live *w = calloc(1, sizeof(*w));

	*out = NULL;
	if (!w)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	/* The list of jobs answers from what is kept; every other operation is
	 * real's, and one real lacks the reader lacks too (reconcile/provider.h). */
	w->reader.inner = real;
	PROVIDER_SET_TABLES(&w->reader, wl_tables);
	w->reader.free = wl_free;
	if (pthread_mutex_init(&w->mu, NULL) != 0) {
		free(w);
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	w->ctx = ctx;
	w->full_every_ms = full_every_ms;
	*out = w;
	return 0;
}

static void expect_release(struct watch_live *w)
{
	for (size_t i = 0; i < w->nexpect; i++)
		free(w->expect[i]);
	free(w->expect);
	free(w->expect_seen);
	w->expect = NULL;
	w->expect_seen = NULL;
	w->nexpect = 0;
}

void watch_live_free(struct watch_live *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nplaces; i++)
		place_free(w->places[i]);
	free(w->places);
	pthread_mutex_destroy(&w->mu);
	expect_release(w);
	free(w);
}

void watch_live_set_real(struct watch_live *w, struct provider *real)
{
	w->reader.inner = real;
}

struct provider *watch_live_provider(struct watch_live *w)
{
	return &w->reader;
}

int watch_live_expect(struct watch_live *w, const char *const *names, size_t n)
{
	expect_release(w);
	if (!n)
		return 0;
	if (!(w->expect = calloc(n, sizeof(*w->expect))) || !(w->expect_seen = calloc(n, 1))) {
		expect_release(w);
		return VX_ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		if (!(w->expect[i] = strdup(names[i]))) {
			expect_release(w);
			return VX_ENOMEM;
		}
		w->nexpect++;
	}
	return 0;
}

void watch_live_invalidate(struct watch_live *w)
{
	for (size_t i = 0; i < w->nplaces; i++) {
		w->places[i]->fresh = 0;
		w->places[i]->has_sig = 0;
	}
	watch_live_cycle_end(w);
}

void watch_live_cycle_end(struct watch_live *w)
{
	for (size_t i = 0; i < w->nplaces; i++) {
		live_jobs_release(&w->places[i]->pre);
		w->places[i]->has_pre = 0;
	}
}

int watch_live_idle(struct watch_live *w, int *same, struct vx_err *err)
{
	int64_t now = vx_mono_ms(w->ctx);
	struct provider *real = real_of(w);
	int rc;

	*same = 0;
	if (!w->nplaces || !PROVIDER_HAS(real, job, list_active) || w->full_every_ms <= 0)
		return 0;
	for (size_t i = 0; i < w->nplaces; i++) {
		const struct place *pl = w->places[i];

		if (!pl->fresh || !pl->has_sig || now - pl->full_ms >= w->full_every_ms)
			return 0;
	}
	for (size_t i = 0; i < w->nplaces; i++) {
		struct place *pl = w->places[i];

		live_jobs_release(&pl->pre);
		pl->has_pre = 0;
		count(w, &w->stats.active_lists);
		if ((rc = provider_job_list_active(real, pl->project, pl->region, pl->stack, &pl->pre, err)) < 0) {
			watch_live_invalidate(w);
			return rc;
		}
		pl->has_pre = 1;
		/* Something changed: the cycle's refresh takes the lists made so far. */
		if (watch_live_digest(&pl->pre) != pl->sig)
			return 0;
	}
	/* A run the state holds as active that no list shows has ended (or is gone). */
	for (size_t e = 0; e < w->nexpect; e++) {
		int found = 0;

		for (size_t i = 0; i < w->nplaces && !found; i++)
			found = in_place(w->places[i], w->expect[e]) && find_job(&w->places[i]->pre, w->expect[e]);
		if (!found)
			return 0;
	}
	*same = 1;
	return 0;
}

void watch_live_stats(const struct watch_live *w, struct watch_live_stats *out)
{
	*out = w->stats;
	out->kept = 0;
	for (size_t i = 0; i < w->nplaces; i++)
		out->kept += w->places[i]->kept.n;
}
