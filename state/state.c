/*
 * The state model: lifecycle, copies, names and addresses, time and
 * randomness, and the operations on records and the journal. Its JSON form
 * is state_json.c. See state.h for the schema rules.
 */
#include "state/state.h"
#include "state/state_shared.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "util/buf.h"
#include "util/ctx.h"
#include "util/rand.h"
#include "util/timefmt.h"
#include "util/banned.h"

/* ---- lifecycle ---------------------------------------------------------- */


void state_run_release(struct state_run *r)
{
	if (!r)
		return;
	free(r->resource);
	free(r->region);
	free(r->action);
	free(r->project);
	free(r->spec_hash);
	vx_labels_free(r->labels, r->nlabels);
	vx_labels_free(r->follows, r->nfollows);
	free(r->state);
	free(r->failure);
	free(r->error_message);
	free(r->config_commit);
	free(r->policy_commit);
	free(r->decl_hash);
	free(r->launched_by);
	free(r->planned_by);
	free(r->pr_url);
	free(r->rung_scheduling);
	free(r->rung_machine);
	free(r->rung_reservation);
	free(r->machine_type);
	free(r->accelerator_type);
	free(r->strategy);
	free(r->reservation);
	memset(r, 0, sizeof(*r));
}

void state_record_release(struct state_record *r)
{
	size_t i;

	if (!r)
		return;
	free(r->address);
	free(r->kind);
	free(r->spec_hash);
	free(r->spec_json);
	if (r->current) {
		state_run_release(r->current);
		free(r->current);
	}
	for (i = 0; i < r->nhistory; i++)
		state_run_release(&r->history[i]);
	free(r->history);
	state_policy_free(r->applied);
	memset(r, 0, sizeof(*r));
}

static void strs_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void state_policy_release(struct state_policy *p)
{
	if (!p)
		return;
	strs_free(p->resubmit_on, p->nresubmit_on);
	free(p->resubmit_budgets);
	free(p->fallback_hash);
	strs_free(p->after, p->nafter);
	memset(p, 0, sizeof(*p));
}

void state_policy_free(struct state_policy *p)
{
	state_policy_release(p);
	free(p);
}

static int strs_copy(char ***out, size_t *nout, char *const *in, size_t n)
{
	*out = NULL;
	*nout = 0;
	if (!n)
		return 0;
	if (!(*out = calloc(n, sizeof(**out))))
		return VX_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (state_dup_opt(&(*out)[i], in[i]) < 0)
			return VX_ENOMEM;
		*nout = i + 1;
	}
	return 0;
}

int state_policy_copy(struct state_policy *out, const struct state_policy *in)
{
	memset(out, 0, sizeof(*out));
	out->max_attempts = in->max_attempts;
	out->delay_ms = in->delay_ms;
	out->fallback_rungs = in->fallback_rungs;
	out->max_parallel = in->max_parallel;
	out->max_failed = in->max_failed;
	memcpy(out->on_exit_codes, in->on_exit_codes, sizeof(out->on_exit_codes));
	out->within_ms = in->within_ms;
	out->return_after_ms = in->return_after_ms;
	out->max_queued_ms = in->max_queued_ms;
	if (in->resubmit_budgets && in->nresubmit_on) {
		if (!(out->resubmit_budgets = calloc(in->nresubmit_on, sizeof(int64_t))))
			return VX_ENOMEM;
		memcpy(out->resubmit_budgets, in->resubmit_budgets, in->nresubmit_on * sizeof(int64_t));
	}
	if (strs_copy(&out->resubmit_on, &out->nresubmit_on, in->resubmit_on, in->nresubmit_on) < 0 ||
	    strs_copy(&out->after, &out->nafter, in->after, in->nafter) < 0 ||
	    state_dup_opt(&out->fallback_hash, in->fallback_hash) < 0) {
		state_policy_release(out);
		return VX_ENOMEM;
	}
	return 0;
}

void state_intent_release(struct state_intent *in)
{
	if (!in)
		return;
	free(in->address);
	free(in->op);
	vx_labels_free(in->labels, in->nlabels);
	memset(in, 0, sizeof(*in));
}

void state_lock_release(struct state_lock *l)
{
	if (!l)
		return;
	free(l->id);
	free(l->user);
	free(l->host);
	free(l->operation);
	memset(l, 0, sizeof(*l));
}

void state_lock_free(struct state_lock *l)
{
	state_lock_release(l);
	free(l);
}

void state_release(struct state *st)
{
	size_t i;

	if (!st)
		return;
	free(st->stack);
	free(st->lineage);
	free(st->salt);
	free(st->lease_ref);
	for (i = 0; i < st->nrecords; i++)
		state_record_release(&st->records[i]);
	free(st->records);
	for (i = 0; i < st->njournal; i++)
		state_intent_release(&st->journal[i]);
	free(st->journal);
	state_lock_free(st->lock);
	for (i = 0; i < st->nnotified; i++)
		free(st->notified[i].key);
	free(st->notified);
	for (i = 0; i < st->nreleased; i++)
		free(st->released[i]);
	free(st->released);
	for (i = 0; i < st->nnotify_targets; i++)
		free(st->notify_targets[i]);
	free(st->notify_targets);
	memset(st, 0, sizeof(*st));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int state_released_has(const struct state *st, const char *name)
{
	return name && st->nreleased &&
	       bsearch(&name, st->released, st->nreleased, sizeof(*st->released), cmp_str) != NULL;
}

int state_released_add(struct state *st, const char *name)
{
	char **grown, *copy;
	size_t at = 0;

	if (!name || !*name || st->nreleased >= STATE_MAX_RELEASED)
		return VX_EINVAL;
	if (state_released_has(st, name))
		return 0;
	while (at < st->nreleased && strcmp(st->released[at], name) < 0)
		at++;
	if (!(copy = strdup(name)))
		return VX_ENOMEM;
	grown = realloc(st->released, (st->nreleased + 1) * sizeof(*grown));
	if (!grown) {
		free(copy);
		return VX_ENOMEM;
	}
	st->released = grown;
	memmove(&grown[at + 1], &grown[at], (st->nreleased - at) * sizeof(*grown));
	grown[at] = copy;
	st->nreleased++;
	return 0;
}

/* "evt_" and 32 hex, ":", 8 hex: the form notify's keys take (reconcile/notify.h). */
static int notified_key_ok(const char *k)
{
	size_t n = k ? strlen(k) : 0;

	if (n != 45 || strncmp(k, "evt_", 4) || k[36] != ':')
		return 0;
	for (size_t i = 4; i < n; i++)
		if (i != 36 && !((k[i] >= '0' && k[i] <= '9') || (k[i] >= 'a' && k[i] <= 'f')))
			return 0;
	return 1;
}

int state_notified_has(const struct state *st, const char *key)
{
	for (size_t i = 0; i < st->nnotified; i++)
		if (!strcmp(st->notified[i].key, key))
			return 1;
	return 0;
}

int state_notified_add(struct state *st, const char *key, int64_t at_ms)
{
	return state_notified_add_until(st, key, at_ms, 0);
}

int state_notified_add_until(struct state *st, const char *key, int64_t at_ms, int64_t until_ms)
{
	struct state_notified *p;
	size_t keep = 0;
	char *k;

	if (!notified_key_ok(key))
		return VX_EINVAL;
	for (size_t i = 0; i < st->nnotified; i++)
		if (!strcmp(st->notified[i].key, key)) {
			if (until_ms > st->notified[i].until_ms)
				st->notified[i].until_ms = until_ms;
			return 0;
		}
	if (!(k = strdup(key)))
		return VX_ENOMEM;
	/* Forget the old ones (and the oldest past the cap) first. */
	for (size_t i = 0; i < st->nnotified; i++) {
		if ((st->notified[i].at_ms < at_ms - STATE_NOTIFIED_KEEP_MS && st->notified[i].until_ms < at_ms) ||
		    st->nnotified - i >= STATE_MAX_NOTIFIED) {
			free(st->notified[i].key);
			continue;
		}
		st->notified[keep++] = st->notified[i];
	}
	st->nnotified = keep;
	p = realloc(st->notified, (st->nnotified + 1) * sizeof(*p));
	if (!p) {
		free(k);
		return VX_ENOMEM;
	}
	st->notified = p;
	p[st->nnotified].key = k;
	p[st->nnotified].at_ms = at_ms;
	p[st->nnotified].until_ms = until_ms;
	st->nnotified++;
	return 0;
}

/* ---- copies ------------------------------------------------------------- */

int state_dup_opt(char **out, const char *s)
{
	*out = NULL;
	if (!s)
		return 0;
	*out = vx_strdup(s);
	return *out ? 0 : VX_ENOMEM;
}


int state_run_copy(struct state_run *out, const struct state_run *in)
{
	memset(out, 0, sizeof(*out));
	out->run = in->run;
	out->attempt = in->attempt;
	out->rung = in->rung;
	out->error_code = in->error_code;
	out->cancelled_by_vx = in->cancelled_by_vx;
	out->config_dirty = in->config_dirty;
	out->created_ms = in->created_ms;
	out->ended_ms = in->ended_ms;
	out->started_ms = in->started_ms;
	out->exit_code = in->exit_code;
	out->timeout_ms = in->timeout_ms;
	out->has_value = in->has_value;
	out->value = in->value;
	out->pr_number = in->pr_number;
	out->accelerator_count = in->accelerator_count;
	out->replicas = in->replicas;
	if (state_dup_opt(&out->machine_type, in->machine_type) < 0 ||
	    state_dup_opt(&out->accelerator_type, in->accelerator_type) < 0 ||
	    state_dup_opt(&out->strategy, in->strategy) < 0 ||
	    state_dup_opt(&out->reservation, in->reservation) < 0 ||
	    state_dup_opt(&out->planned_by, in->planned_by) < 0 ||
	    state_dup_opt(&out->pr_url, in->pr_url) < 0 || state_dup_opt(&out->resource, in->resource) < 0 || state_dup_opt(&out->region, in->region) < 0 ||
	    state_dup_opt(&out->project, in->project) < 0 ||
	    state_dup_opt(&out->action, in->action) < 0 || state_dup_opt(&out->spec_hash, in->spec_hash) < 0 ||
	    state_dup_opt(&out->state, in->state) < 0 || state_dup_opt(&out->failure, in->failure) < 0 ||
	    state_dup_opt(&out->error_message, in->error_message) < 0 ||
	    state_dup_opt(&out->config_commit, in->config_commit) < 0 ||
	    state_dup_opt(&out->policy_commit, in->policy_commit) < 0 ||
	    state_dup_opt(&out->decl_hash, in->decl_hash) < 0 ||
	    state_dup_opt(&out->launched_by, in->launched_by) < 0 ||
	    state_dup_opt(&out->rung_scheduling, in->rung_scheduling) < 0 ||
	    state_dup_opt(&out->rung_machine, in->rung_machine) < 0 ||
	    state_dup_opt(&out->rung_reservation, in->rung_reservation) < 0 ||
	    vx_labels_copy(&out->labels, &out->nlabels, in->labels, in->nlabels) < 0 ||
	    vx_labels_copy(&out->follows, &out->nfollows, in->follows, in->nfollows) < 0) {
		state_run_release(out);
		return VX_ENOMEM;
	}
	return 0;
}

int state_record_copy(struct state_record *out, const struct state_record *in)
{
	size_t i;

	memset(out, 0, sizeof(*out));
	out->run = in->run;
	out->attempts = in->attempts;
	out->protect = in->protect;
	out->on_remove = in->on_remove;
	if (state_dup_opt(&out->address, in->address) < 0 || state_dup_opt(&out->kind, in->kind) < 0 ||
	    state_dup_opt(&out->spec_hash, in->spec_hash) < 0 ||
	    state_dup_opt(&out->spec_json, in->spec_json) < 0)
		goto fail;
	if (in->current) {
		out->current = calloc(1, sizeof(*out->current));
		if (!out->current || state_run_copy(out->current, in->current) < 0)
			goto fail;
	}
	if (in->applied) {
		out->applied = calloc(1, sizeof(*out->applied));
		if (!out->applied || state_policy_copy(out->applied, in->applied) < 0)
			goto fail;
	}
	if (in->nhistory) {
		out->history = calloc(in->nhistory, sizeof(*out->history));
		if (!out->history)
			goto fail;
		for (i = 0; i < in->nhistory; i++) {
			if (state_run_copy(&out->history[i], &in->history[i]) < 0)
				goto fail;
			out->nhistory = i + 1;
		}
	}
	out->mark = 1; /* a new record: no backend holds it */
	return 0;
fail:
	state_record_release(out);
	return VX_ENOMEM;
}

int state_lock_copy(struct state_lock *out, const struct state_lock *in)
{
	memset(out, 0, sizeof(*out));
	out->pid = in->pid;
	out->started_ms = in->started_ms;
	out->expires_ms = in->expires_ms;
	if (state_dup_opt(&out->id, in->id) < 0 || state_dup_opt(&out->user, in->user) < 0 ||
	    state_dup_opt(&out->host, in->host) < 0 || state_dup_opt(&out->operation, in->operation) < 0) {
		state_lock_release(out);
		return VX_ENOMEM;
	}
	return 0;
}

static int intent_copy(struct state_intent *out, const struct state_intent *in)
{
	memset(out, 0, sizeof(*out));
	out->started_ms = in->started_ms;
	if (state_dup_opt(&out->address, in->address) < 0 || state_dup_opt(&out->op, in->op) < 0 ||
	    vx_labels_copy(&out->labels, &out->nlabels, in->labels, in->nlabels) < 0) {
		state_intent_release(out);
		return VX_ENOMEM;
	}
	return 0;
}

/* ---- names, addresses, time, randomness ---------------------------------- */

int state_name_ok(const char *s, int allow_dot)
{
	size_t n = 0;

	if (!s || !*s || *s == '.')
		return 0;
	for (; s[n]; n++) {
		char c = s[n];

		if (n >= STATE_MAX_NAME)
			return 0;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '_' || c == '-' || (allow_dot && c == '.'))
			continue;
		/* a run of a sweep: "lr-sweep[lr=3e-4,seed=1]" */
		if (allow_dot && (c == '[' || c == ']' || c == '=' || c == ','))
			continue;
		return 0;
	}
	/* "x.lock" and ".." would be refused as git ref or path components. */
	return strstr(s, "..") == NULL;
}

/*
 * Addresses and folders, one rule for every kind (state.h): PREFIX.NAME,
 * its records in PREFIXs/. Which prefixes are kinds is the reconcile
 * layer's business (reconcile/kind.c's kind_table): this layer keeps a
 * record of any well-formed prefix, so a record a newer vx wrote, of a
 * kind this one does not know, is carried through a save as it was.
 */
int state_prefix_ok(const char *s, size_t n)
{
	if (!s || n == 0 || n > STATE_MAX_PREFIX || s[0] < 'a' || s[0] > 'z')
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return 0;
	return 1;
}

size_t state_dir_prefix(const char *dir)
{
	size_t n = dir ? strlen(dir) : 0;

	return n >= 2 && dir[n - 1] == 's' && state_prefix_ok(dir, n - 1) ? n - 1 : 0;
}

int state_address_split(const char *address, char *kind_dir, const char **name,
			struct vx_err *err)
{
	const char *dot = address ? strchr(address, '.') : NULL;
	size_t pl = dot ? (size_t)(dot - address) : 0;

	if (dot && state_prefix_ok(address, pl) && state_name_ok(dot + 1, 1)) {
		if (kind_dir)
			snprintf(kind_dir, STATE_DIR_SIZE, "%.*ss", (int)pl, address);
		if (name)
			*name = dot + 1;
		return 0;
	}
	return vx_err_set(err, VX_EINVAL,
			  "bad address \"%.200s\": want KIND.NAME with KIND of 1-%d lowercase letters, "
			  "digits or '_' (a letter first) and NAME of 1-%d letters, digits, '_', '-' or '.'",
			  address ? address : "(null)", STATE_MAX_PREFIX, STATE_MAX_NAME);
}

void state_time_format(int64_t ms, char *out)
{
	vx_time_format(out, STATE_TIME_MAX, ms, 0);
}

/* Only the form state_time_format writes: the state is ours, anything else is damage. */
int state_time_parse(const char *s, int64_t *ms)
{
	return vx_time_parse(ms, s, VX_TIME_STRICT);
}

int state_random_hex(const struct vx_ctx *ctx, const char *salt, char *out, struct vx_err *err)
{
	unsigned char b[16];
	int rc = vx_rand_bytes(ctx, salt, b, sizeof(b), err);

	if (rc == 0)
		vx_rand_hex(out, b, sizeof(b));
	return rc;
}

int state_random_uuid(const struct vx_ctx *ctx, const char *salt, char *out, struct vx_err *err)
{
	unsigned char b[16];
	int rc = vx_rand_bytes(ctx, salt, b, sizeof(b), err);

	if (rc == 0)
		vx_uuid_format(out, b);
	return rc;
}

/* ---- model operations ------------------------------------------------------ */

int state_new(struct state *out, const char *stack, const struct vx_ctx *ctx, struct vx_err *err)
{
	char uuid[37];
	int rc;

	memset(out, 0, sizeof(*out));
	if (!state_name_ok(stack, 0))
		return vx_err_set(err, VX_EINVAL,
				  "bad stack name \"%.200s\": want 1-%d letters, digits, '_' or '-'",
				  stack ? stack : "(null)", STATE_MAX_NAME);
	rc = state_random_uuid(ctx, stack, uuid, err);
	if (rc < 0)
		return rc;
	out->stack = vx_strdup(stack);
	out->lineage = vx_strdup(uuid);
	if (!out->stack || !out->lineage) {
		state_release(out);
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	rc = state_ensure_salt(out, ctx, err);
	if (rc < 0) {
		state_release(out);
		return rc;
	}
	return 0;
}

int state_ensure_salt(struct state *st, const struct vx_ctx *ctx, struct vx_err *err)
{
	char hex[65];
	int rc;

	if (st->salt)
		return 0;
	/* Two 16-byte draws: 32 bytes, as much as the SHA-256 block of HMAC uses well.
	 * The seed strings differ so a seeded (test) context gets two different halves. */
	if ((rc = state_random_hex(ctx, "salt:0", hex, err)) < 0 ||
	    (rc = state_random_hex(ctx, "salt:1", hex + 32, err)) < 0)
		return rc;
	st->salt = vx_strdup(hex);
	return st->salt ? 1 : vx_err_set(err, VX_ENOMEM, "out of memory");
}

int state_salt_ok(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return i == 64;
}

/* Index of address in the sorted records, or where it would go (*found = 0). */
static size_t record_pos(const struct state *st, const char *address, int *found)
{
	size_t lo = 0, hi = st->nrecords;

	*found = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(st->records[mid].address, address);

		if (c == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct state_record *state_find(const struct state *st, const char *address)
{
	int found;
	size_t i;

	if (!st || !address)
		return NULL;
	i = record_pos(st, address, &found);
	return found ? &st->records[i] : NULL;
}

struct state_record *state_edit(struct state *st, const char *address)
{
	int found;
	size_t i;

	if (!st || !address)
		return NULL;
	i = record_pos(st, address, &found);
	if (!found)
		return NULL;
	st->records[i].mark = 1;
	return &st->records[i];
}

void state_record_mark(struct state_record *r)
{
	r->mark = 1;
}

void state_saved(struct state *st, const void *base, uint64_t epoch)
{
	/* A flag per record: far cheaper than anything a save does per record it writes. */
	for (size_t i = 0; i < st->nrecords; i++)
		st->records[i].mark = 0;
	st->base = base;
	st->base_epoch = epoch;
}

int state_add_record(struct state *st, const char *address, const char *kind,
		     struct state_record **out, struct vx_err *err)
{
	struct state_record *grown, r;
	size_t i;
	int found, rc;

	rc = state_address_split(address, NULL, NULL, err);
	if (rc < 0)
		return rc;
	if (!kind || !*kind)
		return vx_err_set(err, VX_EINVAL, "state: %s: a record needs its kind", address);
	i = record_pos(st, address, &found);
	if (found)
		return vx_err_set(err, VX_ECONFLICT, "state already has %s", address);
	if (st->nrecords >= STATE_MAX_RECORDS)
		return vx_err_set(err, VX_EINVAL, "state: more than %d records", STATE_MAX_RECORDS);
	memset(&r, 0, sizeof(r));
	if (state_dup_opt(&r.address, address) < 0 || state_dup_opt(&r.kind, kind) < 0) {
		state_record_release(&r);
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	grown = realloc(st->records, (st->nrecords + 1) * sizeof(*grown));
	if (!grown) {
		state_record_release(&r);
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	st->records = grown;
	memmove(&st->records[i + 1], &st->records[i], (st->nrecords - i) * sizeof(*grown));
	r.mark = 1;
	st->records[i] = r;
	st->nrecords++;
	if (out)
		*out = &st->records[i];
	return 0;
}

int state_remove_record(struct state *st, const char *address)
{
	int found;
	size_t i = record_pos(st, address, &found);

	if (!found)
		return VX_ENOTFOUND;
	state_record_release(&st->records[i]);
	memmove(&st->records[i], &st->records[i + 1],
		(st->nrecords - i - 1) * sizeof(*st->records));
	st->nrecords--;
	/* What a save would have to take out is not tracked: the next save writes
	 * st whole, which finds it gone. Removals are rare (a forget, vx state rm). */
	st->base = NULL;
	return 0;
}

int state_record_add_history(struct state_record *r, struct state_run *run, struct vx_err *err)
{
	struct state_run *grown;

	if (r->nhistory >= STATE_MAX_HISTORY) {
		state_run_release(run);
		return vx_err_set(err, VX_EINVAL, "%s: more than %d past runs", r->address,
				  STATE_MAX_HISTORY);
	}
	grown = realloc(r->history, (r->nhistory + 1) * sizeof(*grown));
	if (!grown) {
		state_run_release(run);
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	r->history = grown;
	r->history[r->nhistory++] = *run;
	memset(run, 0, sizeof(*run));
	r->mark = 1;
	return 0;
}

int state_record_start_run(struct state_record *r, struct state_run *run, struct vx_err *err)
{
	struct state_run *cur = NULL, *grown;
	int rc = 0;

	if (r->current) {
		if (r->nhistory >= STATE_MAX_HISTORY) {
			rc = vx_err_set(err, VX_EINVAL, "%s: more than %d past runs", r->address,
					STATE_MAX_HISTORY);
			goto done;
		}
		grown = realloc(r->history, (r->nhistory + 1) * sizeof(*grown));
		if (!grown) {
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			goto done;
		}
		r->history = grown;
	}
	cur = malloc(sizeof(*cur));
	if (!cur) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	*cur = *run;
	memset(run, 0, sizeof(*run));
	if (r->current) {
		r->history[r->nhistory++] = *r->current;
		free(r->current);
	}
	r->current = cur;
	r->mark = 1;
done:
	if (rc < 0)
		state_run_release(run);
	return rc;
}



int state_journal_add(struct state *st, const struct state_intent *in, struct vx_err *err)
{
	struct state_intent copy, *grown;
	size_t i;
	int rc;

	rc = state_address_split(in->address, NULL, NULL, err);
	if (rc < 0)
		return rc;
	if (intent_copy(&copy, in) < 0)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	for (i = 0; i < st->njournal; i++) {
		if (strcmp(st->journal[i].address, in->address) == 0) {
			state_intent_release(&st->journal[i]);
			st->journal[i] = copy;
			return 0;
		}
	}
	if (st->njournal >= STATE_MAX_JOURNAL) {
		state_intent_release(&copy);
		return vx_err_set(err, VX_EINVAL, "state journal: more than %d entries",
				  STATE_MAX_JOURNAL);
	}
	grown = realloc(st->journal, (st->njournal + 1) * sizeof(*grown));
	if (!grown) {
		state_intent_release(&copy);
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	st->journal = grown;
	st->journal[st->njournal++] = copy;
	return 0;
}

int state_journal_remove(struct state *st, const char *address)
{
	size_t i;

	for (i = 0; i < st->njournal; i++) {
		if (strcmp(st->journal[i].address, address) != 0)
			continue;
		state_intent_release(&st->journal[i]);
		memmove(&st->journal[i], &st->journal[i + 1],
			(st->njournal - i - 1) * sizeof(*st->journal));
		st->njournal--;
		return 0;
	}
	return VX_ENOTFOUND;
}

/* 32 lowercase hex: a notify target's digest (reconcile/notify.h). */
static int notify_target_ok(const char *d)
{
	size_t n = d ? strlen(d) : 0;

	if (n != 32)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((d[i] >= '0' && d[i] <= '9') || (d[i] >= 'a' && d[i] <= 'f')))
			return 0;
	return 1;
}

int state_notify_target_has(const struct state *st, const char *digest)
{
	return digest && st->nnotify_targets &&
	       bsearch(&digest, st->notify_targets, st->nnotify_targets, sizeof(*st->notify_targets), cmp_str) != NULL;
}

int state_notify_targets_set(struct state *st, const char *const *digests, size_t n, int *changed)
{
	char **next = NULL;
	size_t m = 0, k = 0;
	int rc = 0;

	*changed = 0;
	if (n > STATE_MAX_NOTIFY_TARGETS)
		return VX_EINVAL;
	if (n && !(next = calloc(n, sizeof(*next))))
		return VX_ENOMEM;
	for (m = 0; m < n; m++) {
		if (!notify_target_ok(digests[m])) {
			rc = VX_EINVAL;
			goto fail;
		}
		if (!(next[m] = strdup(digests[m]))) {
			rc = VX_ENOMEM;
			goto fail;
		}
	}
	if (m)
		qsort(next, m, sizeof(*next), cmp_str);
	/* Unique: a target written twice is one target. */
	for (size_t i = 0; i < m; i++) {
		if (k && !strcmp(next[i], next[k - 1])) {
			free(next[i]);
			continue;
		}
		next[k++] = next[i];
	}
	*changed = k != st->nnotify_targets;
	for (size_t i = 0; i < k && !*changed; i++)
		*changed = strcmp(next[i], st->notify_targets[i]) != 0;
	for (size_t i = 0; i < st->nnotify_targets; i++)
		free(st->notify_targets[i]);
	free(st->notify_targets);
	st->notify_targets = k ? next : NULL;
	st->nnotify_targets = k;
	if (!k)
		free(next);
	return 0;
fail:
	for (size_t i = 0; i < m; i++)
		free(next[i]);
	free(next);
	return rc;
}
