/*
 * The state model and its JSON form. See state.h for the schema rules.
 *
 * Writing builds a cJSON tree with keys added in a fixed order (cJSON keeps
 * insertion order), so the same state always prints the same bytes.
 * Parsing goes through cJSON (bounded nesting) and then a strict walk that
 * checks every key, type and range; cJSON never leaves this file.
 */
#include "state/state.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "util/buf.h"
#include "util/ctx.h"
#include "util/timefmt.h"
#include "util/banned.h"

#define F_REQ 1  /* the key must be present */
#define F_NULL 2 /* null is allowed (and means "unset") */
#define MAX_SAFE_INT 9007199254740992.0 /* 2^53: integers above lose precision in JSON */
#define MAX_SPEC ((size_t)1 << 20)

/* ---- lifecycle ---------------------------------------------------------- */

static void labels_free(struct state_label *l, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(l[i].key);
		free(l[i].value);
	}
	free(l);
}

void state_run_release(struct state_run *r)
{
	if (!r)
		return;
	free(r->resource);
	free(r->region);
	free(r->action);
	free(r->project);
	free(r->spec_hash);
	labels_free(r->labels, r->nlabels);
	free(r->state);
	free(r->failure);
	free(r->error_message);
	free(r->config_commit);
	free(r->decl_hash);
	free(r->launched_by);
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
	memset(r, 0, sizeof(*r));
}

void state_intent_release(struct state_intent *in)
{
	if (!in)
		return;
	free(in->address);
	free(in->op);
	labels_free(in->labels, in->nlabels);
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
	for (i = 0; i < st->nrecords; i++)
		state_record_release(&st->records[i]);
	free(st->records);
	for (i = 0; i < st->njournal; i++)
		state_intent_release(&st->journal[i]);
	free(st->journal);
	state_lock_free(st->lock);
	memset(st, 0, sizeof(*st));
}

/* ---- copies ------------------------------------------------------------- */

/* vx_strdup that reports failure for a non-NULL input. */
static int dup_opt(char **out, const char *s)
{
	*out = NULL;
	if (!s)
		return 0;
	*out = vx_strdup(s);
	return *out ? 0 : VX_ENOMEM;
}

static int labels_copy(struct state_label **out, size_t *nout, const struct state_label *in,
		       size_t n)
{
	size_t i;

	*out = NULL;
	*nout = 0;
	if (!n)
		return 0;
	*out = calloc(n, sizeof(**out));
	if (!*out)
		return VX_ENOMEM;
	for (i = 0; i < n; i++) {
		*nout = i + 1;
		if (dup_opt(&(*out)[i].key, in[i].key) < 0 || dup_opt(&(*out)[i].value, in[i].value) < 0)
			return VX_ENOMEM;
	}
	return 0;
}

int state_run_copy(struct state_run *out, const struct state_run *in)
{
	memset(out, 0, sizeof(*out));
	out->run = in->run;
	out->attempt = in->attempt;
	out->error_code = in->error_code;
	out->cancelled_by_vx = in->cancelled_by_vx;
	out->config_dirty = in->config_dirty;
	out->created_ms = in->created_ms;
	out->ended_ms = in->ended_ms;
	if (dup_opt(&out->resource, in->resource) < 0 || dup_opt(&out->region, in->region) < 0 ||
	    dup_opt(&out->project, in->project) < 0 ||
	    dup_opt(&out->action, in->action) < 0 || dup_opt(&out->spec_hash, in->spec_hash) < 0 ||
	    dup_opt(&out->state, in->state) < 0 || dup_opt(&out->failure, in->failure) < 0 ||
	    dup_opt(&out->error_message, in->error_message) < 0 ||
	    dup_opt(&out->config_commit, in->config_commit) < 0 ||
	    dup_opt(&out->decl_hash, in->decl_hash) < 0 ||
	    dup_opt(&out->launched_by, in->launched_by) < 0 ||
	    labels_copy(&out->labels, &out->nlabels, in->labels, in->nlabels) < 0) {
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
	if (dup_opt(&out->address, in->address) < 0 || dup_opt(&out->kind, in->kind) < 0 ||
	    dup_opt(&out->spec_hash, in->spec_hash) < 0 ||
	    dup_opt(&out->spec_json, in->spec_json) < 0)
		goto fail;
	if (in->current) {
		out->current = calloc(1, sizeof(*out->current));
		if (!out->current || state_run_copy(out->current, in->current) < 0)
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
	if (dup_opt(&out->id, in->id) < 0 || dup_opt(&out->user, in->user) < 0 ||
	    dup_opt(&out->host, in->host) < 0 || dup_opt(&out->operation, in->operation) < 0) {
		state_lock_release(out);
		return VX_ENOMEM;
	}
	return 0;
}

static int intent_copy(struct state_intent *out, const struct state_intent *in)
{
	memset(out, 0, sizeof(*out));
	out->started_ms = in->started_ms;
	if (dup_opt(&out->address, in->address) < 0 || dup_opt(&out->op, in->op) < 0 ||
	    labels_copy(&out->labels, &out->nlabels, in->labels, in->nlabels) < 0) {
		state_intent_release(out);
		return VX_ENOMEM;
	}
	return 0;
}

/* ---- names, addresses, time, randomness ---------------------------------- */

static int name_ok(const char *s, int allow_dot)
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
		return 0;
	}
	/* "x.lock" and ".." would be refused as git ref or path components. */
	return strstr(s, "..") == NULL;
}

int state_address_split(const char *address, const char **kind_dir, const char **name,
			struct vx_err *err)
{
	static const struct {
		const char *prefix;
		const char *dir;
	} kinds[] = { { "job.", "jobs" }, { "reservation.", "reservations" }, { "quota.", "quotas" } };
	size_t i;

	for (i = 0; address && i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		size_t pl = strlen(kinds[i].prefix);

		if (strncmp(address, kinds[i].prefix, pl) != 0)
			continue;
		if (!name_ok(address + pl, 1))
			break;
		if (kind_dir)
			*kind_dir = kinds[i].dir;
		if (name)
			*name = address + pl;
		return 0;
	}
	return vx_err_set(err, VX_EINVAL,
			  "bad address \"%.200s\": want job.NAME, reservation.NAME or quota.NAME "
			  "with NAME of 1-%d letters, digits, '_', '-' or '.'",
			  address ? address : "(null)", STATE_MAX_NAME);
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t era;
	unsigned doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (unsigned)(z - era * 146097);
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int64_t)yoe + era * 400 + (*m <= 2);
}

void state_time_format(int64_t ms, char *out)
{
	int64_t days, secs, y;
	unsigned mo, d;
	int frac;

	if (ms < 0)
		ms = 0;
	if (ms > INT64_C(253402300799999))
		ms = INT64_C(253402300799999); /* 9999-12-31T23:59:59.999Z */
	frac = (int)(ms % 1000);
	secs = ms / 1000;
	days = secs / 86400;
	secs %= 86400;
	civil_from_days(days, &y, &mo, &d);
	if (frac)
		snprintf(out, STATE_TIME_MAX, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", (int)y, mo, d,
			 (int)(secs / 3600), (int)(secs / 60 % 60), (int)(secs % 60), frac);
	else
		snprintf(out, STATE_TIME_MAX, "%04d-%02u-%02uT%02d:%02d:%02dZ", (int)y, mo, d,
			 (int)(secs / 3600), (int)(secs / 60 % 60), (int)(secs % 60));
}

/* Only the form state_time_format writes: the state is ours, anything else is damage. */
int state_time_parse(const char *s, int64_t *ms)
{
	return vx_time_parse(ms, s, VX_TIME_STRICT);
}

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static int random_bytes(const struct vx_ctx *ctx, const char *salt, unsigned char *out,
			size_t n, struct vx_err *err)
{
	size_t got = 0, i;

	if (ctx && ctx->seed) {
		uint64_t x = ctx->seed, h = UINT64_C(1469598103934665603), v = 0;
		const char *p;

		for (p = salt ? salt : ""; *p; p++)
			h = (h ^ (unsigned char)*p) * UINT64_C(1099511628211);
		x ^= h ^ ((uint64_t)vx_now_ms(ctx) * UINT64_C(0x9e3779b97f4a7c15));
		for (i = 0; i < n; i++) {
			if (i % 8 == 0)
				v = splitmix64(&x);
			out[i] = (unsigned char)(v >> (8 * (i % 8)));
		}
		return 0;
	}
	while (got < n) {
		ssize_t r = getrandom(out + got, n - got, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return vx_err_set(err, VX_EIO, "getrandom: %s", strerror(errno));
		}
		got += (size_t)r;
	}
	return 0;
}

int state_random_hex(const struct vx_ctx *ctx, const char *salt, char *out, struct vx_err *err)
{
	unsigned char b[16];
	size_t i;
	int rc = random_bytes(ctx, salt, b, sizeof(b), err);

	if (rc < 0)
		return rc;
	for (i = 0; i < sizeof(b); i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	return 0;
}

int state_random_uuid(const struct vx_ctx *ctx, const char *salt, char *out, struct vx_err *err)
{
	unsigned char b[16];
	int rc = random_bytes(ctx, salt, b, sizeof(b), err);

	if (rc < 0)
		return rc;
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	snprintf(out, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
		 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
		 b[14], b[15]);
	return 0;
}

static int uuid_ok(const char *s)
{
	int i;

	if (strlen(s) != 36)
		return 0;
	for (i = 0; i < 36; i++) {
		char c = s[i];

		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (c != '-')
				return 0;
		} else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
			return 0;
		}
	}
	return 1;
}

static int lock_id_ok(const char *s)
{
	int i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return i == 32;
}

/* ---- model operations ------------------------------------------------------ */

int state_new(struct state *out, const char *stack, const struct vx_ctx *ctx, struct vx_err *err)
{
	char uuid[37];
	int rc;

	memset(out, 0, sizeof(*out));
	if (!name_ok(stack, 0))
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

struct state_record *state_find(const struct state *st, const char *address)
{
	int found;
	size_t i;

	if (!st || !address)
		return NULL;
	i = record_pos(st, address, &found);
	return found ? &st->records[i] : NULL;
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
	i = record_pos(st, address, &found);
	if (found)
		return vx_err_set(err, VX_ECONFLICT, "state already has %s", address);
	if (st->nrecords >= STATE_MAX_RECORDS)
		return vx_err_set(err, VX_EINVAL, "state: more than %d records", STATE_MAX_RECORDS);
	memset(&r, 0, sizeof(r));
	if (dup_opt(&r.address, address) < 0 || dup_opt(&r.kind, kind ? kind : "CustomJob") < 0) {
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
done:
	if (rc < 0)
		state_run_release(run);
	return rc;
}

int state_labels_set(struct state_label **labels, size_t *n, const char *key, const char *value)
{
	struct state_label *grown;
	char *k = NULL, *v = NULL;
	size_t i;

	for (i = 0; i < *n; i++) {
		int c = strcmp((*labels)[i].key, key);

		if (c == 0) {
			v = vx_strdup(value);
			if (!v)
				return VX_ENOMEM;
			free((*labels)[i].value);
			(*labels)[i].value = v;
			return 0;
		}
		if (c > 0)
			break;
	}
	k = vx_strdup(key);
	v = vx_strdup(value);
	grown = k && v ? realloc(*labels, (*n + 1) * sizeof(*grown)) : NULL;
	if (!grown) {
		free(k);
		free(v);
		return VX_ENOMEM;
	}
	*labels = grown;
	memmove(&grown[i + 1], &grown[i], (*n - i) * sizeof(*grown));
	grown[i].key = k;
	grown[i].value = v;
	(*n)++;
	return 0;
}

const char *state_labels_get(const struct state_label *labels, size_t n, const char *key)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(labels[i].key, key) == 0)
			return labels[i].value;
	return NULL;
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

/* ---- writing ---------------------------------------------------------------- */

/* Each adder returns 0 or -1 (out of memory); callers map -1 to VX_ENOMEM. */
static int add_str(cJSON *o, const char *k, const char *v)
{
	cJSON *item = v ? cJSON_CreateString(v) : cJSON_CreateNull();

	if (!item)
		return -1;
	return cJSON_AddItemToObject(o, k, item) ? 0 : (cJSON_Delete(item), -1);
}

static int add_int(cJSON *o, const char *k, int64_t v)
{
	cJSON *item = cJSON_CreateNumber((double)v);

	if (!item)
		return -1;
	return cJSON_AddItemToObject(o, k, item) ? 0 : (cJSON_Delete(item), -1);
}

static int add_bool(cJSON *o, const char *k, int v)
{
	cJSON *item = cJSON_CreateBool(v != 0);

	if (!item)
		return -1;
	return cJSON_AddItemToObject(o, k, item) ? 0 : (cJSON_Delete(item), -1);
}

static int add_time(cJSON *o, const char *k, int64_t ms)
{
	char t[STATE_TIME_MAX];

	if (!ms)
		return add_str(o, k, NULL);
	state_time_format(ms, t);
	return add_str(o, k, t);
}

static int add_item(cJSON *o, const char *k, cJSON *item)
{
	if (!item)
		return -1;
	return cJSON_AddItemToObject(o, k, item) ? 0 : (cJSON_Delete(item), -1);
}

static cJSON *labels_json(const struct state_label *l, size_t n)
{
	cJSON *o = cJSON_CreateObject();
	size_t i;

	for (i = 0; o && i < n; i++) {
		if (add_str(o, l[i].key, l[i].value) < 0) {
			cJSON_Delete(o);
			return NULL;
		}
	}
	return o;
}

static cJSON *run_json(const struct state_run *r)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	if (add_str(o, "resource", r->resource) < 0 ||
	    (r->project && add_str(o, "project", r->project) < 0) ||
	    add_str(o, "region", r->region) < 0 ||
	    add_str(o, "action", r->action) < 0 || add_str(o, "specHash", r->spec_hash) < 0 ||
	    add_int(o, "run", r->run) < 0 || add_int(o, "attempt", r->attempt) < 0 ||
	    add_item(o, "labels", labels_json(r->labels, r->nlabels)) < 0 ||
	    add_str(o, "state", r->state) < 0 || add_str(o, "failure", r->failure) < 0 ||
	    add_int(o, "errorCode", r->error_code) < 0 ||
	    add_str(o, "errorMessage", r->error_message) < 0 ||
	    add_bool(o, "cancelledByVx", r->cancelled_by_vx) < 0 ||
	    add_time(o, "createdAt", r->created_ms) < 0 || add_time(o, "endedAt", r->ended_ms) < 0 ||
	    add_str(o, "configCommit", r->config_commit) < 0 ||
	    add_bool(o, "configDirty", r->config_dirty) < 0 ||
	    add_str(o, "declHash", r->decl_hash) < 0 ||
	    add_str(o, "launchedBy", r->launched_by) < 0) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *lock_json(const struct state_lock *l, int with_version)
{
	cJSON *o;

	if (!l)
		return cJSON_CreateNull();
	o = cJSON_CreateObject();
	if (!o)
		return NULL;
	if ((with_version && add_int(o, "version", STATE_VERSION) < 0) ||
	    add_str(o, "id", l->id) < 0 || add_str(o, "user", l->user) < 0 ||
	    add_str(o, "host", l->host) < 0 || add_int(o, "pid", l->pid) < 0 ||
	    add_str(o, "operation", l->operation) < 0 ||
	    add_time(o, "startedAt", l->started_ms) < 0 ||
	    add_time(o, "expiresAt", l->expires_ms) < 0) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* -1 out of memory, -2 the spec is not a JSON object. */
static int record_json(const struct state_record *r, int with_version, cJSON **out)
{
	cJSON *o = cJSON_CreateObject(), *spec = NULL, *hist = NULL;
	size_t i;
	int rc = -1;

	*out = NULL;
	if (!o)
		goto done;
	if (r->spec_json) {
		spec = cJSON_ParseWithLength(r->spec_json, strlen(r->spec_json));
		if (!spec || !cJSON_IsObject(spec)) {
			rc = -2;
			goto done;
		}
	} else {
		spec = cJSON_CreateNull();
		if (!spec)
			goto done;
	}
	if ((with_version && add_int(o, "version", STATE_VERSION) < 0) ||
	    add_str(o, "address", r->address) < 0 || add_str(o, "kind", r->kind) < 0 ||
	    add_str(o, "specHash", r->spec_hash) < 0)
		goto done;
	rc = add_item(o, "spec", spec);
	spec = NULL;
	if (rc < 0)
		goto done;
	rc = -1;
	if (add_int(o, "run", r->run) < 0 || add_int(o, "attempts", r->attempts) < 0 ||
	    add_bool(o, "protect", r->protect) < 0 ||
	    add_item(o, "current", r->current ? run_json(r->current) : cJSON_CreateNull()) < 0)
		goto done;
	hist = cJSON_CreateArray();
	if (!hist)
		goto done;
	for (i = 0; i < r->nhistory; i++) {
		cJSON *h = run_json(&r->history[i]);

		if (!h || !cJSON_AddItemToArray(hist, h)) {
			cJSON_Delete(h);
			goto done;
		}
	}
	if (add_item(o, "history", hist) < 0) {
		hist = NULL;
		goto done;
	}
	hist = NULL;
	*out = o;
	o = NULL;
	rc = 0;
done:
	cJSON_Delete(hist);
	cJSON_Delete(spec);
	cJSON_Delete(o);
	return rc;
}

static cJSON *intent_json(const struct state_intent *in)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	if (add_str(o, "address", in->address) < 0 || add_str(o, "op", in->op) < 0 ||
	    add_item(o, "labels", labels_json(in->labels, in->nlabels)) < 0 ||
	    add_time(o, "startedAt", in->started_ms) < 0) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* Prints o with a trailing newline into *out; frees o. */
static int print_json(cJSON *o, char **out, struct vx_err *err)
{
	char *s = o ? cJSON_Print(o) : NULL;
	int rc = 0;

	*out = NULL;
	if (!s) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	*out = vx_asprintf("%s\n", s);
	if (!*out)
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
done:
	if (s)
		cJSON_free(s);
	cJSON_Delete(o);
	return rc;
}

static int header_json(const struct state *st, int with_records, cJSON **out, struct vx_err *err)
{
	cJSON *o = cJSON_CreateObject(), *arr = NULL;
	size_t i;
	int rc = VX_ENOMEM;

	*out = NULL;
	if (!st->stack || !st->lineage) {
		rc = vx_err_set(err, VX_EINVAL, "state has no stack name or lineage");
		goto done;
	}
	if (st->serial > (uint64_t)MAX_SAFE_INT) {
		rc = vx_err_set(err, VX_EINVAL, "state serial %llu is too large",
				(unsigned long long)st->serial);
		goto done;
	}
	if (!o || add_int(o, "version", STATE_VERSION) < 0 || add_str(o, "stack", st->stack) < 0 ||
	    add_int(o, "serial", (int64_t)st->serial) < 0 ||
	    add_str(o, "lineage", st->lineage) < 0 ||
	    (st->salt && add_str(o, "salt", st->salt) < 0) ||
	    add_item(o, "lock", lock_json(st->lock, 0)) < 0)
		goto oom;
	arr = cJSON_CreateArray();
	for (i = 0; arr && i < st->njournal; i++) {
		cJSON *j = intent_json(&st->journal[i]);

		if (!j || !cJSON_AddItemToArray(arr, j)) {
			cJSON_Delete(j);
			goto oom;
		}
	}
	rc = add_item(o, "journal", arr);
	arr = NULL;
	if (rc < 0)
		goto oom;
	if (with_records) {
		arr = cJSON_CreateArray();
		for (i = 0; arr && i < st->nrecords; i++) {
			cJSON *r = NULL;

			rc = record_json(&st->records[i], 0, &r);
			if (rc == -2) {
				rc = vx_err_set(err, VX_EINVAL, "%s: the spec is not a JSON object",
						st->records[i].address);
				goto done;
			}
			if (rc < 0 || !cJSON_AddItemToArray(arr, r)) {
				cJSON_Delete(r);
				goto oom;
			}
		}
		rc = add_item(o, "records", arr);
		arr = NULL;
		if (rc < 0)
			goto oom;
	}
	*out = o;
	o = NULL;
	rc = 0;
	goto done;
oom:
	rc = vx_err_set(err, VX_ENOMEM, "out of memory");
done:
	cJSON_Delete(arr);
	cJSON_Delete(o);
	return rc;
}

int state_to_json(const struct state *st, char **out, struct vx_err *err)
{
	cJSON *o = NULL;
	int rc;

	*out = NULL;
	rc = header_json(st, 1, &o, err);
	if (rc < 0)
		return rc;
	return print_json(o, out, err);
}

int state_header_to_json(const struct state *st, char **out, struct vx_err *err)
{
	cJSON *o = NULL;
	int rc;

	*out = NULL;
	rc = header_json(st, 0, &o, err);
	if (rc < 0)
		return rc;
	return print_json(o, out, err);
}

int state_record_to_json(const struct state_record *r, char **out, struct vx_err *err)
{
	cJSON *o = NULL;
	int rc;

	*out = NULL;
	rc = record_json(r, 1, &o);
	if (rc == -2)
		return vx_err_set(err, VX_EINVAL, "%s: the spec is not a JSON object", r->address);
	if (rc < 0)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	return print_json(o, out, err);
}

int state_lock_to_json(const struct state_lock *l, char **out, struct vx_err *err)
{
	*out = NULL;
	return print_json(lock_json(l, 1), out, err);
}

/* ---- parsing ---------------------------------------------------------------- */

static int utf8_ok(const unsigned char *s)
{
	while (*s) {
		unsigned c = *s, n, cp, i;

		if (c < 0x80) {
			s++;
			continue;
		}
		if ((c & 0xe0) == 0xc0) {
			n = 1;
			cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			n = 2;
			cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			n = 3;
			cp = c & 0x07;
		} else {
			return 0;
		}
		for (i = 1; i <= n; i++) {
			if ((s[i] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		s += n + 1;
	}
	return 1;
}

/* Every key and string valid UTF-8, every number finite. */
static int tree_ok(const cJSON *o)
{
	const cJSON *c;

	if (o->string && !utf8_ok((const unsigned char *)o->string))
		return 0;
	if (cJSON_IsString(o) && !utf8_ok((const unsigned char *)o->valuestring))
		return 0;
	if (cJSON_IsNumber(o) && !isfinite(o->valuedouble))
		return 0;
	for (c = o->child; c; c = c->next)
		if (!tree_ok(c))
			return 0;
	return 1;
}

static void jpath(char *buf, size_t n, const char *path, const char *k)
{
	if (path && *path)
		snprintf(buf, n, "%s.%s", path, k);
	else
		snprintf(buf, n, "%s", k);
}

/* o must be an object whose keys are all in keys[] (no duplicates), and has every F_REQ key. */
static int check_keys(const cJSON *o, const char *path, const char *const *keys,
		      const int *flags, size_t nkeys, struct vx_err *err)
{
	const cJSON *c;
	uint64_t seen = 0;
	size_t i;

	if (!o || !cJSON_IsObject(o))
		return vx_err_set(err, VX_EINVAL, "%s: expected an object", *path ? path : "(top)");
	for (c = o->child; c; c = c->next) {
		for (i = 0; i < nkeys; i++)
			if (strcmp(c->string, keys[i]) == 0)
				break;
		if (i == nkeys)
			return vx_err_set(err, VX_EINVAL, "%s%sunknown key \"%.100s\"", path,
					  *path ? ": " : "", c->string);
		if (seen & ((uint64_t)1 << i))
			return vx_err_set(err, VX_EINVAL, "%s%sduplicate key \"%s\"", path,
					  *path ? ": " : "", keys[i]);
		seen |= (uint64_t)1 << i;
	}
	for (i = 0; i < nkeys; i++)
		if ((flags[i] & F_REQ) && !(seen & ((uint64_t)1 << i)))
			return vx_err_set(err, VX_EINVAL, "%s%smissing key \"%s\"", path,
					  *path ? ": " : "", keys[i]);
	return 0;
}

static int get_str(const cJSON *o, const char *path, const char *k, int flags, size_t max,
		   char **out, struct vx_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	char p[512];

	*out = NULL;
	jpath(p, sizeof(p), path, k);
	if (!v)
		return (flags & F_REQ) ? vx_err_set(err, VX_EINVAL, "%s: missing", p) : 0;
	if (cJSON_IsNull(v) && (flags & F_NULL))
		return 0;
	if (!cJSON_IsString(v) || !v->valuestring)
		return vx_err_set(err, VX_EINVAL, "%s: expected a string%s", p,
				  (flags & F_NULL) ? " or null" : "");
	if (strlen(v->valuestring) > max)
		return vx_err_set(err, VX_EINVAL, "%s: longer than %zu bytes", p, max);
	if (!(flags & F_NULL) && !*v->valuestring)
		return vx_err_set(err, VX_EINVAL, "%s: must not be empty", p);
	*out = vx_strdup(v->valuestring);
	return *out ? 0 : vx_err_set(err, VX_ENOMEM, "out of memory");
}

static int get_int(const cJSON *o, const char *path, const char *k, int64_t min, int64_t max,
		   int64_t *out, struct vx_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	char p[512];
	double d;

	jpath(p, sizeof(p), path, k);
	*out = 0;
	if (!v)
		return vx_err_set(err, VX_EINVAL, "%s: missing", p);
	d = v->valuedouble;
	if (!cJSON_IsNumber(v) || !isfinite(d) || floor(d) != d || d > MAX_SAFE_INT ||
	    d < -MAX_SAFE_INT)
		return vx_err_set(err, VX_EINVAL, "%s: expected an integer", p);
	if (d < (double)min || d > (double)max)
		return vx_err_set(err, VX_EINVAL, "%s: %.0f is out of range [%lld, %lld]", p, d,
				  (long long)min, (long long)max);
	*out = (int64_t)d;
	return 0;
}

static int get_bool(const cJSON *o, const char *path, const char *k, int *out,
		    struct vx_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	char p[512];

	jpath(p, sizeof(p), path, k);
	if (!cJSON_IsBool(v))
		return vx_err_set(err, VX_EINVAL, "%s: expected true or false", p);
	*out = cJSON_IsTrue(v) ? 1 : 0;
	return 0;
}

/* A boolean that may be absent (then false): for keys added after version 1 was first written. */
static int get_opt_bool(const cJSON *o, const char *path, const char *k, int *out,
			struct vx_err *err)
{
	*out = 0;
	if (!cJSON_GetObjectItemCaseSensitive(o, k))
		return 0;
	return get_bool(o, path, k, out, err);
}

static int get_time(const cJSON *o, const char *path, const char *k, int flags, int64_t *out,
		    struct vx_err *err)
{
	char *s = NULL, p[512];
	int rc;

	*out = 0;
	rc = get_str(o, path, k, flags, 64, &s, err);
	if (rc < 0 || !s)
		return rc;
	jpath(p, sizeof(p), path, k);
	if (state_time_parse(s, out) < 0)
		rc = vx_err_set(err, VX_EINVAL, "%s: \"%s\" is not a time like 2026-11-22T10:02:00Z",
				p, s);
	else if (*out == 0)
		rc = vx_err_set(err, VX_EINVAL, "%s: the epoch itself is not a valid time", p);
	free(s);
	return rc;
}

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct state_label *)a)->key, ((const struct state_label *)b)->key);
}

static int get_labels(const cJSON *o, const char *path, const char *k, struct state_label **out,
		      size_t *nout, struct vx_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k), *c;
	size_t n = 0, i;
	char p[512];

	*out = NULL;
	*nout = 0;
	jpath(p, sizeof(p), path, k);
	if (!cJSON_IsObject(v))
		return vx_err_set(err, VX_EINVAL, "%s: expected an object", p);
	for (c = v->child; c; c = c->next) {
		if (++n > STATE_MAX_LABELS)
			return vx_err_set(err, VX_EINVAL, "%s: more than %d labels", p,
					  STATE_MAX_LABELS);
		if (!cJSON_IsString(c) || !*c->string || strlen(c->string) > 256 ||
		    strlen(c->valuestring) > 1024)
			return vx_err_set(err, VX_EINVAL,
					  "%s: label \"%.100s\" must be a non-empty key (at most 256 "
					  "bytes) with a string value (at most 1024 bytes)",
					  p, c->string);
	}
	if (!n)
		return 0;
	*out = calloc(n, sizeof(**out));
	if (!*out)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	for (c = v->child, i = 0; c; c = c->next, i++) {
		*nout = i + 1;
		if (dup_opt(&(*out)[i].key, c->string) < 0 ||
		    dup_opt(&(*out)[i].value, c->valuestring) < 0)
			return vx_err_set(err, VX_ENOMEM, "out of memory");
	}
	qsort(*out, n, sizeof(**out), label_cmp);
	for (i = 1; i < n; i++)
		if (strcmp((*out)[i - 1].key, (*out)[i].key) == 0)
			return vx_err_set(err, VX_EINVAL, "%s: duplicate label \"%.100s\"", p,
					  (*out)[i].key);
	return 0;
}

static int run_from(const cJSON *o, const char *path, struct state_run *r, struct vx_err *err)
{
	static const char *const keys[] = { "resource", "project", "region", "action", "specHash", "run",
					    "attempt", "labels", "state", "failure", "errorCode",
					    "errorMessage", "cancelledByVx", "createdAt", "endedAt",
					    "configCommit", "configDirty", "declHash", "launchedBy" };
	/* project, launchedBy, configDirty and declHash came after the first
	 * states were written: optional, so those states stay readable. */
	static const int flags[] = { F_REQ, F_NULL, F_REQ, F_REQ, F_REQ, F_REQ, F_REQ, F_REQ, F_REQ,
				     F_REQ, F_REQ, F_REQ, F_REQ, F_REQ, F_REQ, F_REQ, F_NULL,
				     F_NULL, F_NULL };
	int rc;

	memset(r, 0, sizeof(*r));
	rc = check_keys(o, path, keys, flags, sizeof(keys) / sizeof(keys[0]), err);
	if (rc < 0)
		return rc;
	if ((rc = get_str(o, path, "resource", F_REQ | F_NULL, 1024, &r->resource, err)) < 0 ||
	    (rc = get_str(o, path, "project", F_NULL, 128, &r->project, err)) < 0 ||
	    (rc = get_str(o, path, "region", F_REQ | F_NULL, 128, &r->region, err)) < 0 ||
	    (rc = get_str(o, path, "action", F_REQ | F_NULL, 64, &r->action, err)) < 0 ||
	    (rc = get_str(o, path, "specHash", F_REQ | F_NULL, 128, &r->spec_hash, err)) < 0 ||
	    (rc = get_int(o, path, "run", 0, INT64_C(1) << 53, &r->run, err)) < 0 ||
	    (rc = get_int(o, path, "attempt", 0, INT64_C(1) << 53, &r->attempt, err)) < 0 ||
	    (rc = get_labels(o, path, "labels", &r->labels, &r->nlabels, err)) < 0 ||
	    (rc = get_str(o, path, "state", F_REQ | F_NULL, 128, &r->state, err)) < 0 ||
	    (rc = get_str(o, path, "failure", F_REQ | F_NULL, 128, &r->failure, err)) < 0 ||
	    (rc = get_int(o, path, "errorCode", -(INT64_C(1) << 31), INT64_C(1) << 31,
			  &r->error_code, err)) < 0 ||
	    (rc = get_str(o, path, "errorMessage", F_REQ | F_NULL, STATE_MAX_STRING,
			  &r->error_message, err)) < 0 ||
	    (rc = get_bool(o, path, "cancelledByVx", &r->cancelled_by_vx, err)) < 0 ||
	    (rc = get_time(o, path, "createdAt", F_REQ | F_NULL, &r->created_ms, err)) < 0 ||
	    (rc = get_time(o, path, "endedAt", F_REQ | F_NULL, &r->ended_ms, err)) < 0 ||
	    (rc = get_str(o, path, "launchedBy", F_NULL, 512, &r->launched_by, err)) < 0 ||
	    (rc = get_opt_bool(o, path, "configDirty", &r->config_dirty, err)) < 0 ||
	    (rc = get_str(o, path, "declHash", F_NULL, 128, &r->decl_hash, err)) < 0 ||
	    (rc = get_str(o, path, "configCommit", F_REQ | F_NULL, 128, &r->config_commit, err)) <
		    0)
		state_run_release(r);
	return rc;
}

static int lock_from(const cJSON *o, const char *path, int with_version, struct state_lock *l,
		     struct vx_err *err)
{
	static const char *const keys[] = { "version", "id", "user", "host", "pid", "operation",
					    "startedAt", "expiresAt" };
	static const int flags[] = { F_REQ, F_REQ, F_REQ, F_REQ, F_REQ, F_REQ, F_REQ, F_REQ };
	int64_t version = STATE_VERSION;
	int rc;
	char p[512];

	memset(l, 0, sizeof(*l));
	rc = check_keys(o, path, keys + !with_version, flags, 8 - !with_version, err);
	if (rc < 0)
		return rc;
	if ((with_version && (rc = get_int(o, path, "version", 0, 1000, &version, err)) < 0))
		return rc;
	if (version != STATE_VERSION)
		return vx_err_set(err, VX_EINVAL,
				  "unsupported lock version %lld (this vx reads version %d)",
				  (long long)version, STATE_VERSION);
	if ((rc = get_str(o, path, "id", F_REQ, 64, &l->id, err)) < 0 ||
	    (rc = get_str(o, path, "user", F_REQ, 256, &l->user, err)) < 0 ||
	    (rc = get_str(o, path, "host", F_REQ, 256, &l->host, err)) < 0 ||
	    (rc = get_int(o, path, "pid", 0, INT32_MAX, &l->pid, err)) < 0 ||
	    (rc = get_str(o, path, "operation", F_REQ, 64, &l->operation, err)) < 0 ||
	    (rc = get_time(o, path, "startedAt", F_REQ, &l->started_ms, err)) < 0 ||
	    (rc = get_time(o, path, "expiresAt", F_REQ, &l->expires_ms, err)) < 0)
		goto fail;
	if (!lock_id_ok(l->id)) {
		jpath(p, sizeof(p), path, "id");
		rc = vx_err_set(err, VX_EINVAL, "%s: not a lock id (32 lowercase hex digits)", p);
		goto fail;
	}
	return 0;
fail:
	state_lock_release(l);
	return rc;
}

static int intent_from(const cJSON *o, const char *path, struct state_intent *in,
		       struct vx_err *err)
{
	static const char *const keys[] = { "address", "op", "labels", "startedAt" };
	static const int flags[] = { F_REQ, F_REQ, F_REQ, F_REQ };
	int rc;

	memset(in, 0, sizeof(*in));
	rc = check_keys(o, path, keys, flags, 4, err);
	if (rc < 0)
		return rc;
	if ((rc = get_str(o, path, "address", F_REQ, 256, &in->address, err)) < 0 ||
	    (rc = get_str(o, path, "op", F_REQ, 64, &in->op, err)) < 0 ||
	    (rc = get_labels(o, path, "labels", &in->labels, &in->nlabels, err)) < 0 ||
	    (rc = get_time(o, path, "startedAt", F_REQ | F_NULL, &in->started_ms, err)) < 0) {
		state_intent_release(in);
		return rc;
	}
	if (state_address_split(in->address, NULL, NULL, err) < 0) {
		state_intent_release(in);
		return vx_err_wrap(err, "%s.address", path);
	}
	return 0;
}

static int record_from(const cJSON *o, const char *path, int with_version,
		       struct state_record *r, struct vx_err *err)
{
	static const char *const keys[] = { "version", "address", "kind", "specHash", "spec",
					    "run", "attempts", "protect", "current", "history" };
	static const int flags[] = { F_REQ, F_REQ, F_REQ, F_REQ, F_REQ,
				     F_REQ, F_REQ, F_REQ, F_REQ, F_REQ };
	const cJSON *spec, *cur, *hist, *c;
	int64_t version = STATE_VERSION;
	size_t n, i;
	char p[512];
	int rc;

	memset(r, 0, sizeof(*r));
	rc = check_keys(o, path, keys + !with_version, flags, 10 - !with_version, err);
	if (rc < 0)
		return rc;
	if (with_version && (rc = get_int(o, path, "version", 0, 1000, &version, err)) < 0)
		return rc;
	if (version != STATE_VERSION)
		return vx_err_set(err, VX_EINVAL,
				  "unsupported state version %lld (this vx reads version %d)",
				  (long long)version, STATE_VERSION);
	if ((rc = get_str(o, path, "address", F_REQ, 256, &r->address, err)) < 0 ||
	    (rc = get_str(o, path, "kind", F_REQ, 64, &r->kind, err)) < 0 ||
	    (rc = get_str(o, path, "specHash", F_REQ | F_NULL, 128, &r->spec_hash, err)) < 0 ||
	    (rc = get_int(o, path, "run", 0, INT64_C(1) << 53, &r->run, err)) < 0 ||
	    (rc = get_int(o, path, "attempts", 0, INT64_C(1) << 53, &r->attempts, err)) < 0 ||
	    (rc = get_bool(o, path, "protect", &r->protect, err)) < 0)
		goto fail;
	if ((rc = state_address_split(r->address, NULL, NULL, err)) < 0) {
		vx_err_wrap(err, "%s%saddress", path, *path ? "." : "");
		goto fail;
	}
	spec = cJSON_GetObjectItemCaseSensitive(o, "spec");
	jpath(p, sizeof(p), path, "spec");
	if (!cJSON_IsNull(spec)) {
		char *s;

		if (!cJSON_IsObject(spec)) {
			rc = vx_err_set(err, VX_EINVAL, "%s: expected an object or null", p);
			goto fail;
		}
		s = cJSON_PrintUnformatted(spec);
		if (!s) {
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			goto fail;
		}
		if (strlen(s) > MAX_SPEC) {
			cJSON_free(s);
			rc = vx_err_set(err, VX_EINVAL, "%s: longer than %zu bytes", p, MAX_SPEC);
			goto fail;
		}
		r->spec_json = vx_strdup(s);
		cJSON_free(s);
		if (!r->spec_json) {
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			goto fail;
		}
	}
	cur = cJSON_GetObjectItemCaseSensitive(o, "current");
	if (!cJSON_IsNull(cur)) {
		jpath(p, sizeof(p), path, "current");
		r->current = calloc(1, sizeof(*r->current));
		if (!r->current) {
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			goto fail;
		}
		if ((rc = run_from(cur, p, r->current, err)) < 0)
			goto fail;
	}
	hist = cJSON_GetObjectItemCaseSensitive(o, "history");
	jpath(p, sizeof(p), path, "history");
	if (!cJSON_IsArray(hist)) {
		rc = vx_err_set(err, VX_EINVAL, "%s: expected an array", p);
		goto fail;
	}
	for (n = 0, c = hist->child; c; c = c->next)
		if (++n > STATE_MAX_HISTORY) {
			rc = vx_err_set(err, VX_EINVAL, "%s: more than %d runs", p,
					STATE_MAX_HISTORY);
			goto fail;
		}
	if (n) {
		r->history = calloc(n, sizeof(*r->history));
		if (!r->history) {
			rc = vx_err_set(err, VX_ENOMEM, "out of memory");
			goto fail;
		}
	}
	for (i = 0, c = hist->child; c; c = c->next, i++) {
		char hp[560];

		snprintf(hp, sizeof(hp), "%s[%zu]", p, i);
		if ((rc = run_from(c, hp, &r->history[i], err)) < 0)
			goto fail;
		r->nhistory = i + 1;
	}
	return 0;
fail:
	state_record_release(r);
	return rc;
}

static int record_cmp(const void *a, const void *b)
{
	return strcmp(((const struct state_record *)a)->address,
		      ((const struct state_record *)b)->address);
}

static int header_from(const cJSON *o, int with_records, struct state *st, struct vx_err *err)
{
	/* "salt" is optional: states written before it existed have none (records last). */
	static const char *const keys[] = { "version", "stack", "serial", "lineage", "lock",
					    "journal", "salt", "records" };
	static const int flags[] = { F_REQ, F_REQ, F_REQ, F_REQ, F_REQ, F_REQ, 0, F_REQ };
	const cJSON *v, *c;
	int64_t version, serial;
	size_t n, i;
	int rc;

	rc = check_keys(o, "", keys, flags, with_records ? 8 : 7, err);
	if (rc < 0)
		return rc;
	if ((rc = get_int(o, "", "version", 0, 1000, &version, err)) < 0)
		return rc;
	if (version != STATE_VERSION)
		return vx_err_set(err, VX_EINVAL,
				  "unsupported state version %lld (this vx reads version %d)",
				  (long long)version, STATE_VERSION);
	if ((rc = get_str(o, "", "stack", F_REQ, 256, &st->stack, err)) < 0 ||
	    (rc = get_int(o, "", "serial", 0, INT64_C(1) << 53, &serial, err)) < 0 ||
	    (rc = get_str(o, "", "lineage", F_REQ, 64, &st->lineage, err)) < 0)
		return rc;
	st->serial = (uint64_t)serial;
	if (!name_ok(st->stack, 0))
		return vx_err_set(err, VX_EINVAL, "stack: bad stack name \"%.100s\"", st->stack);
	if (!uuid_ok(st->lineage))
		return vx_err_set(err, VX_EINVAL, "lineage: not a UUID");
	if ((rc = get_str(o, "", "salt", 0, 64, &st->salt, err)) < 0)
		return rc;
	if (st->salt && !state_salt_ok(st->salt))
		return vx_err_set(err, VX_EINVAL, "salt: not 64 lowercase hex digits");
	v = cJSON_GetObjectItemCaseSensitive(o, "lock");
	if (!cJSON_IsNull(v)) {
		st->lock = calloc(1, sizeof(*st->lock));
		if (!st->lock)
			return vx_err_set(err, VX_ENOMEM, "out of memory");
		if ((rc = lock_from(v, "lock", 0, st->lock, err)) < 0)
			return rc;
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "journal");
	if (!cJSON_IsArray(v))
		return vx_err_set(err, VX_EINVAL, "journal: expected an array");
	for (n = 0, c = v->child; c; c = c->next)
		if (++n > STATE_MAX_JOURNAL)
			return vx_err_set(err, VX_EINVAL, "journal: more than %d entries",
					  STATE_MAX_JOURNAL);
	if (n && !(st->journal = calloc(n, sizeof(*st->journal))))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	for (i = 0, c = v->child; c; c = c->next, i++) {
		char p[64];

		snprintf(p, sizeof(p), "journal[%zu]", i);
		if ((rc = intent_from(c, p, &st->journal[i], err)) < 0)
			return rc;
		st->njournal = i + 1;
	}
	if (!with_records)
		return 0;
	v = cJSON_GetObjectItemCaseSensitive(o, "records");
	if (!cJSON_IsArray(v))
		return vx_err_set(err, VX_EINVAL, "records: expected an array");
	for (n = 0, c = v->child; c; c = c->next)
		if (++n > STATE_MAX_RECORDS)
			return vx_err_set(err, VX_EINVAL, "records: more than %d records",
					  STATE_MAX_RECORDS);
	if (n && !(st->records = calloc(n, sizeof(*st->records))))
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	for (i = 0, c = v->child; c; c = c->next, i++) {
		char p[64];

		snprintf(p, sizeof(p), "records[%zu]", i);
		if ((rc = record_from(c, p, 0, &st->records[i], err)) < 0)
			return rc;
		st->nrecords = i + 1;
	}
	if (st->nrecords > 1)
		qsort(st->records, st->nrecords, sizeof(*st->records), record_cmp);
	for (i = 1; i < st->nrecords; i++)
		if (strcmp(st->records[i - 1].address, st->records[i].address) == 0)
			return vx_err_set(err, VX_EINVAL, "records: %s appears twice",
					  st->records[i].address);
	return 0;
}

/* Parses text into a tree, with bounds; the error names line and column. */
static int parse_root(const char *text, size_t len, size_t max, cJSON **out, struct vx_err *err)
{
	const char *end = NULL, *p;
	unsigned line = 1, col = 1;
	cJSON *root;

	*out = NULL;
	if (!text)
		return vx_err_set(err, VX_EINVAL, "no input");
	if (len > max)
		return vx_err_set(err, VX_EINVAL, "%zu bytes is over the limit of %zu", len, max);
	if (memchr(text, '\0', len))
		return vx_err_set(err, VX_EINVAL, "contains a NUL byte");
	root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
	if (root) {
		for (p = end; p < text + len; p++) {
			if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
				end = p;
				cJSON_Delete(root);
				root = NULL;
				break;
			}
		}
	}
	if (!root) {
		if (!end || end < text || end > text + len)
			end = text + len;
		for (p = text; p < end; p++) {
			if (*p == '\n') {
				line++;
				col = 1;
			} else {
				col++;
			}
		}
		return vx_err_set(err, VX_EINVAL, "%u:%u: not valid JSON", line, col);
	}
	if (!tree_ok(root)) {
		cJSON_Delete(root);
		return vx_err_set(err, VX_EINVAL, "invalid UTF-8 or a non-finite number");
	}
	*out = root;
	return 0;
}

int state_from_json(struct state *out, const char *text, size_t len, struct vx_err *err)
{
	cJSON *root = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = parse_root(text, len, STATE_MAX_JSON, &root, err);
	if (rc == 0)
		rc = header_from(root, 1, out, err);
	cJSON_Delete(root);
	if (rc < 0) {
		state_release(out);
		vx_err_wrap(err, "invalid state JSON");
	}
	return rc;
}

int state_header_from_json(struct state *out, const char *text, size_t len, struct vx_err *err)
{
	cJSON *root = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = parse_root(text, len, STATE_MAX_FILE, &root, err);
	if (rc == 0)
		rc = header_from(root, 0, out, err);
	cJSON_Delete(root);
	if (rc < 0) {
		state_release(out);
		vx_err_wrap(err, "invalid state JSON");
	}
	return rc;
}

int state_record_from_json(struct state_record *out, const char *text, size_t len,
			   struct vx_err *err)
{
	cJSON *root = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = parse_root(text, len, STATE_MAX_FILE, &root, err);
	if (rc == 0)
		rc = record_from(root, "", 1, out, err);
	cJSON_Delete(root);
	if (rc < 0) {
		state_record_release(out);
		vx_err_wrap(err, "invalid state record JSON");
	}
	return rc;
}

int state_lock_from_json(struct state_lock *out, const char *text, size_t len,
			 struct vx_err *err)
{
	cJSON *root = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = parse_root(text, len, 64 << 10, &root, err);
	if (rc == 0)
		rc = lock_from(root, "", 1, out, err);
	cJSON_Delete(root);
	if (rc < 0) {
		state_lock_release(out);
		vx_err_wrap(err, "invalid lock JSON");
	}
	return rc;
}
