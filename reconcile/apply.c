/*
 * The apply executor, written once for every kind (reconcile/kind.h): it
 * runs the kinds' removals in reverse phase order, then their changes in
 * phase order, and gives them the shared steps of reconcile/applier.h
 * (progress, the commit of each step, failures, the lease heartbeat and
 * fence, the journal). What a kind's actions do is in its kind_*.c.
 */
#include "reconcile/apply.h"
#include "reconcile/applier.h"
#include "reconcile/kind.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/failure.h"
#include "reconcile/plan.h"
#include "reconcile/provider.h"
#include "reconcile/runlabel.h"
#include "reconcile/stack.h"
#include "state/state.h"
#include "util/buf.h"
#include "util/ctx.h"
#include "util/banned.h"

void apply_result_release(struct apply_result *r)
{
	vx_diags_release(&r->failures);
	for (size_t i = 0; i < r->ncreated; i++) {
		free(r->created[i]);
		free(r->created_regions[i]);
	}
	free(r->created);
	free(r->created_regions);
	memset(r, 0, sizeof(*r));
}

static int fence_check(void *ud, struct vx_err *err)
{
	struct applier *a = ud;
	int rc = a->hooks->fence(a->hooks->ud, err);

	if (rc < 0) {
		pthread_mutex_lock(&a->fence_lock);
		if (!a->fenced) {
			a->fenced = 1;
			(void)vx_err_set(&a->fence_err, rc, "%s", vx_err_msg(err));
		}
		pthread_mutex_unlock(&a->fence_lock);
	}
	return rc;
}

const struct provider_fence *applier_fence(const struct applier *a)
{
	return a->hooks->fence ? &a->fence : NULL;
}

int applier_fenced(const struct applier *a)
{
	int f;

	pthread_mutex_lock((pthread_mutex_t *)(uintptr_t)&a->fence_lock);
	f = a->fenced;
	pthread_mutex_unlock((pthread_mutex_t *)(uintptr_t)&a->fence_lock);
	return f;
}

int applier_fence_stop(struct applier *a, struct vx_err *err)
{
	a->res->fenced = 1;
	return vx_err_set(err, a->fence_err.code, "%s", vx_err_msg(&a->fence_err));
}

void applier_mark_failed(struct applier *a, const char *address)
{
	char **grown = realloc(a->failed, (a->nfailed + 1) * sizeof(*grown));

	if (!grown || !(grown[a->nfailed] = strdup(address))) {
		if (grown)
			a->failed = grown;
		a->oom = 1;
		return;
	}
	a->failed = grown;
	a->nfailed++;
}

int applier_has_failed(const struct applier *a, const char *address)
{
	for (size_t i = 0; i < a->nfailed; i++)
		if (!strcmp(a->failed[i], address))
			return 1;
	return 0;
}


void applier_progress(struct applier *a, const char *fmt, ...)
{
	struct vx_buf b = VX_BUF_INIT;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vx_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	if (rc == 0) {
		if (a->hooks->progress)
			a->hooks->progress(a->hooks->ud, vx_buf_str(&b));
		if (vx_buf_add(&a->msg, b.data, b.len) < 0 || vx_buf_addc(&a->msg, '\n') < 0)
			a->oom = 1;
	}
	vx_buf_release(&b);
}

void applier_fail(struct applier *a, const char *address, const char *what, const struct vx_err *e)
{
	a->res->failed++;
	vx_diags_add(&a->res->failures, NULL, 0, 0, "%s: %s: %s", address, what, vx_err_msg(e));
	if (a->hooks->progress) {
		char *line = vx_asprintf("! %s %s failed: %s", address, what, vx_err_msg(e));

		if (line)
			a->hooks->progress(a->hooks->ud, line);
		free(line);
	}
}

/* A subject lists what changed up to about this many bytes, then "and N more". */
#define SUBJECT_MAX 72

/* The token of s up to a space, a colon or the end. */
static size_t word_len(const char *s)
{
	return strcspn(s, " :\n");
}

/*
 * "A -> B" at the end of an action line's rest (a resize, a new
 * preferredValue) as " (A → B)" into b; nothing when there is none.
 */
static int add_change(struct vx_buf *b, const char *rest, size_t n)
{
	const char *arrow = NULL, *from, *to, *end = rest + n;

	for (const char *p = rest; p + 4 <= end; p++)
		if (!strncmp(p, " -> ", 4))
			arrow = p;
	if (!arrow)
		return 0;
	for (from = arrow; from > rest && from[-1] != ' '; from--)
		;
	to = arrow + 4;
	return vx_buf_printf(b, " (%.*s \xe2\x86\x92 %.*s)", (int)(arrow - from), from,
			     (int)word_len(to), to);
}

/* One line of a step's message as a subject item into b; *intent when it is one. */
static int subject_item(struct vx_buf *b, const char *line, size_t n, int *intent)
{
	const struct kind *k;
	const char *addr, *rest, *colon;
	size_t alen;

	*intent = 0;
	if (n > 7 && !strncmp(line, "intent ", 7)) {
		addr = line + 7;
		alen = word_len(addr);
		*intent = 1;
		return vx_buf_printf(b, "intent %s %.*s", !strncmp(addr + alen, " create", 7) ? "+" : "~",
				     (int)alen, addr);
	}
	if (n > 2 && (line[0] == '+' || line[0] == '~' || line[0] == '-') && line[1] == ' ') {
		addr = line + 2;
		alen = word_len(addr);
		rest = addr + alen;
		if (vx_buf_printf(b, "%c %.*s", line[0], (int)alen, addr) < 0)
			return VX_ENOMEM;
		/* A count or preferredValue that moved; a job's update reason is too long
		 * (the kind's update_says_why). addr starts "PREFIX." when it is a kind's. */
		if (line[0] == '~' && !((k = kind_of_address(addr)) && k->update_says_why))
			return add_change(b, rest, (size_t)(line + n - rest));
		return 0;
	}
	/* A refresh line: "job.a: running -> succeeded (stockout)". */
	colon = memchr(line, ':', n);
	if (colon && colon + 2 < line + n && colon[1] == ' ') {
		const char *s = colon + 2, *arrow = strstr(s, " -> ");

		if (!arrow || arrow > line + n)
			return 1;
		return vx_buf_printf(b, "%.*s %.*s \xe2\x86\x92 %.*s", (int)word_len(line), line,
				     (int)(arrow - s), s, (int)word_len(arrow + 4), arrow + 4);
	}
	return 1; /* not an action */
}

char *apply_subject(const char *prefix, const char *lines)
{
	struct vx_buf out = VX_BUF_INIT, items = VX_BUF_INIT, item = VX_BUF_INIT, needle = VX_BUF_INIT;
	size_t shown = 0, more = 0, nitems = 0, nintents = 0;
	const char *p = lines;
	char *ret = NULL;
	int rc = 0;

	while (rc == 0 && p && *p) {
		size_t n = strcspn(p, "\n");
		int intent;

		vx_buf_reset(&item);
		vx_buf_reset(&needle);
		rc = subject_item(&item, p, n, &intent);
		p += n + (p[n] == '\n');
		if (rc == 1) {
			rc = 0;
			continue;
		}
		if (rc < 0)
			break;
		/* The same item twice (a cancel and a forget of one job) is said once:
		 * items holds "\nITEM\n" for each, so a whole-line match is a search. */
		if (vx_buf_addc(&item, '\n') < 0 || vx_buf_printf(&needle, "\n%s", vx_buf_str(&item)) < 0) {
			rc = VX_ENOMEM;
			break;
		}
		if (strstr(vx_buf_str(&items), vx_buf_str(&needle)))
			continue;
		nitems++;
		nintents += intent;
		if ((!items.len && vx_buf_addc(&items, '\n') < 0) || vx_buf_add(&items, item.data, item.len) < 0)
			rc = VX_ENOMEM;
	}
	if (rc < 0 || nitems == 0)
		goto done;
	if (vx_buf_printf(&out, "%s%s", prefix, nintents == nitems ? "intent " : "") < 0)
		goto done;
	/* Intents alone: "intent + job.a, + job.b"; beside results (a batch's
	 * results are saved with the next batch's intents), each is marked:
	 * "+ job.a, intent + job.b". */
	for (p = vx_buf_str(&items) + 1; *p; p += strcspn(p, "\n") + 1) {
		size_t n = strcspn(p, "\n");

		if (nintents == nitems && !strncmp(p, "intent ", 7)) {
			p += 7;
			n -= 7;
		}

		if (more || (shown && out.len + 2 + n > SUBJECT_MAX)) {
			more++;
			continue;
		}
		if (vx_buf_printf(&out, "%s%.*s", shown ? ", " : "", (int)n, p) < 0)
			goto done;
		shown++;
	}
	if (more && vx_buf_printf(&out, " and %zu more", more) < 0)
		goto done;
	ret = vx_buf_detach(&out);
done:
	vx_buf_release(&out);
	vx_buf_release(&items);
	vx_buf_release(&item);
	vx_buf_release(&needle);
	return ret;
}

int applier_persist(struct applier *a, const char *summary, struct vx_err *err)
{
	struct vx_buf m = VX_BUF_INIT;
	char *subject;
	int rc;

	if (a->oom)
		return vx_err_set(err, VX_ENOMEM, "apply: out of memory");
	if (a->msg.len == 0 && !a->dirty)
		return 0;
	a->dirty = 0;
	if (a->msg.len == 0)
		return a->hooks->persist(a->hooks->ud, a->state, summary, err);
	/* The subject says what happened; summary only when no line names an action. */
	subject = apply_subject("vx apply: ", vx_buf_str(&a->msg));
	rc = vx_buf_printf(&m, "%s\n\n%s", subject ? subject : summary, vx_buf_str(&a->msg));
	free(subject);
	if (rc == 0)
		rc = a->hooks->persist(a->hooks->ud, a->state, vx_buf_str(&m), err);
	else
		rc = vx_err_set(err, VX_ENOMEM, "apply: out of memory");
	vx_buf_release(&m);
	vx_buf_reset(&a->msg);
	return rc;
}

int applier_heartbeat(struct applier *a, struct vx_err *err)
{
	return a->hooks->heartbeat ? a->hooks->heartbeat(a->hooks->ud, err) : 0;
}

int applier_record_action(struct applier *a, const char *address, const char *kind_name,
			  const char *decl_hash, struct state_run *run, struct vx_err *err)
{
	struct state_record *r = state_edit(a->state, address);

	if (!r && state_add_record(a->state, address, kind_name, &r, err) < 0) {
		state_run_release(run);
		return err->code;
	}
	if (decl_hash) {
		free(r->spec_hash);
		r->spec_hash = vx_strdup(decl_hash);
	}
	if (!run->project)
		run->project = vx_strdup(a->opts->project);
	run->spec_hash = vx_strdup(r->spec_hash);
	run->attempt = 1;
	run->created_ms = vx_now_ms(a->ctx);
	run->config_commit = vx_strdup(a->opts->config_commit);
	applier_stamp_run(a, run);
	run->has_value = 1;
	return state_record_start_run(r, run, err);
}

void applier_stamp_run(struct applier *a, struct state_run *run)
{
	const struct apply_options *o = a->opts;

	run->launched_by = vx_strdup(o->launched_by);
	run->planned_by = vx_strdup(o->planned_by);
	run->pr_number = o->pr_number;
	run->pr_url = vx_strdup(o->pr_url);
	run->policy_commit = vx_strdup(o->policy_commit);
	if ((o->launched_by && !run->launched_by) || (o->planned_by && !run->planned_by) ||
	    (o->pr_url && !run->pr_url) || (o->policy_commit && !run->policy_commit))
		a->oom = 1;
}

int applier_journal(struct applier *a, const char *address, const char *op,
		    const struct vx_label *labels, size_t nlabels, struct vx_err *err)
{
	struct state_intent in;
	int rc;

	/* Borrowed: state_journal_add keeps a copy. labels are sorted by key. */
	memset(&in, 0, sizeof(in));
	in.address = (char *)(uintptr_t)address;
	in.op = (char *)(uintptr_t)op;
	in.started_ms = vx_now_ms(a->ctx);
	in.labels = (struct vx_label *)(uintptr_t)labels;
	in.nlabels = nlabels;
	rc = state_journal_add(a->state, &in, err);
	if (rc == 0 && vx_buf_printf(&a->msg, "intent %s %s\n", address, op) < 0)
		a->oom = 1;
	return rc;
}

int applier_intend_create(struct applier *a, const char *address, const struct vx_label *labels, size_t nlabels,
			  struct vx_err *err)
{
	int rc = applier_journal(a, address, "create", labels, nlabels, err);

	return rc < 0 ? rc : applier_persist(a, "vx: apply: intents", err);
}

/* An earlier apply's journaled create of address, and its requestId. */
static const char *pending_request_id(const struct applier *a, const char *address)
{
	for (size_t i = 0; i < a->state->njournal; i++)
		if (!strcmp(a->state->journal[i].address, address))
			return vx_labels_get(a->state->journal[i].labels, a->state->journal[i].nlabels,
					     "vx-request-id");
	return NULL;
}

int applier_intend_create_id(struct applier *a, const char *address, char id[37], struct vx_err *err)
{
	const char *old = pending_request_id(a, address);
	struct vx_label lab = { (char *)(uintptr_t) "vx-request-id", NULL };
	int rc;

	if (old && strlen(old) < 37)
		snprintf(id, 37, "%s", old);
	else if ((rc = state_random_uuid(a->ctx, address, id, err)) < 0)
		return rc;
	lab.value = id;
	return applier_intend_create(a, address, &lab, 1, err);
}

int apply_run(struct apply_result *result, struct vx_ctx *ctx, const struct plan *plan,
	      const struct stack *st, struct state *state, struct provider *prov,
	      const struct apply_options *opts, const struct apply_hooks *hooks, struct vx_err *err)
{
	struct applier a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.ctx = ctx;
	a.plan = plan;
	a.st = st;
	a.state = state;
	a.prov = prov;
	a.opts = opts;
	a.hooks = hooks;
	a.res = result;
	a.fence.check = fence_check;
	a.fence.ud = &a;
	pthread_mutex_init(&a.fence_lock, NULL);
	memset(result, 0, sizeof(*result));
	/* Removals in reverse phase order (jobs are cancelled before the
	 * reservation they run on is deleted), then changes in phase order
	 * (quota preferences, reservations, jobs). */
	rc = 0;
	for (size_t k = kind_count; k-- > 0 && rc == 0 && !a.res->fenced;)
		rc = kind_table[k]->apply(&a, 1, err);
	if (rc == 0)
		rc = applier_persist(&a, "vx: apply: removals", err);
	for (size_t k = 0; k < kind_count && rc == 0 && !a.res->fenced; k++)
		rc = kind_table[k]->apply(&a, 0, err);
	if (rc == 0)
		rc = applier_persist(&a, "vx: apply", err);
	for (size_t i = 0; i < a.nfailed; i++)
		free(a.failed[i]);
	free(a.failed);
	vx_buf_release(&a.msg);
	vx_err_release(&a.fence_err);
	pthread_mutex_destroy(&a.fence_lock);
	return rc;
}
