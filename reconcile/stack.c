/*
 * The stack loader: a directory of YAML files -> struct stack, with every
 * problem reported as "FILE:LINE:COLUMN: KIND \"NAME\": field: message".
 *
 * It works in passes over the parsed documents: sort them by kind, read the
 * Stack (its region and labels are defaults for the rest), the reservations
 * (jobs may name them), the quota preferences, then the jobs, whose spec is
 * checked by spec_check() against the reservations declared. Problems never
 * stop the passes, so one run reports all of them; only allocation failures
 * and unreadable files end it early. The hashes are computed only for a
 * stack that is valid.
 */
#include "reconcile/stack.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "reconcile/machines.h"
#include "reconcile/spec.h"
#include "reconcile/ynode.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/digest.h"
#include "util/suggest.h"
#include "util/banned.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Vertex allows 64 labels on a job; vx adds six of its own (apply.h APPLY_NLABELS). */
#define STACK_MAX_USER_LABELS 58
#define STACK_MAX_ATTEMPTS 100
#define STACK_MAX_DISPLAY_NAME 128

const char *const stack_fail_names[STACK_FAIL_NCLASSES] = {
	"stockout", "preempted", "wait-timeout", "quota", "user-error", "internal",
	"cancelled-outside",
};

static const char *const on_change_names[] = { "replace", "after-finish", "ignore" };
static const char *const backend_names[] = { "git", "file", "gcs" };
static const char *const kind_names[] = { "Stack", "CustomJob", "Reservation", "QuotaPreference" };

enum { KIND_STACK, KIND_JOB, KIND_RESERVATION, KIND_QUOTA, KIND_COUNT };

static const char *const stack_keys[] = { "kind", "name", "project", "region", "state", "labels" };
static const char *const state_keys[] = { "backend", "path", "remote", "branch", "bucket" };
static const char *const job_keys[] = { "kind", "name", "region", "displayName", "labels", "spec",
					"run", "resubmit", "onChange", "protect" };
static const char *const resubmit_keys[] = { "on", "maxAttempts" };
static const char *const reservation_keys[] = { "kind", "name", "zone", "machineType",
						"accelerators", "count",
						"specificReservationRequired", "description", "protect" };
static const char *const accel_keys[] = { "type", "count" };
static const char *const quota_keys[] = { "kind", "name", "service", "quotaId", "dimensions",
					  "preferredValue", "contactEmail", "justification",
					  "ignoreSafetyChecks" };

const char *stack_fail_name(unsigned cls)
{
	for (unsigned i = 0; i < STACK_FAIL_NCLASSES; i++)
		if (cls == 1u << i)
			return stack_fail_names[i];
	return NULL;
}

unsigned stack_fail_parse(const char *name)
{
	for (unsigned i = 0; i < STACK_FAIL_NCLASSES; i++)
		if (!strcmp(name, stack_fail_names[i]))
			return 1u << i;
	return 0;
}

const char *stack_on_change_name(enum stack_on_change v)
{
	if (v < STACK_ON_CHANGE_REPLACE || v > STACK_ON_CHANGE_IGNORE)
		return NULL;
	return on_change_names[v - 1];
}

const char *stack_backend_name(enum stack_backend b)
{
	if (b < STACK_BACKEND_GIT || b > STACK_BACKEND_GCS)
		return NULL;
	return backend_names[b - 1];
}

/* ---------------------------------------------------------------------- */
/* Character rules */

static int is_lower(int c) { return c >= 'a' && c <= 'z'; }
static int is_digit(int c) { return c >= '0' && c <= '9'; }

int stack_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 63 || !is_lower((unsigned char)s[0]))
		return 0;
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];

		if (!is_lower(c) && !is_digit(c) && c != '-' && c != '_')
			return 0;
	}
	return 1;
}

/* Compute Engine resource names (RFC 1035): [a-z]([-a-z0-9]*[a-z0-9])?, at most 63. */
static int rfc1035_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 63 || !is_lower((unsigned char)s[0]) || s[n - 1] == '-')
		return 0;
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];

		if (!is_lower(c) && !is_digit(c) && c != '-')
			return 0;
	}
	return 1;
}

static int label_chars_valid(const char *s)
{
	for (; *s; s++) {
		int c = (unsigned char)*s;

		if (!is_lower(c) && !is_digit(c) && c != '-' && c != '_')
			return 0;
	}
	return 1;
}

static int label_key_valid(const char *s)
{
	size_t n = strlen(s);

	return n >= 1 && n <= 64 && is_lower((unsigned char)s[0]) && label_chars_valid(s);
}

static int label_value_valid(const char *s)
{
	return strlen(s) <= 64 && label_chars_valid(s);
}

/* A region name: us-central1, europe-west4, northamerica-northeast1. */
static int region_valid(const char *s)
{
	const char *p = s;

	if (!is_lower((unsigned char)*p))
		return 0;
	while (is_lower((unsigned char)*p))
		p++;
	if (*p++ != '-' || !is_lower((unsigned char)*p))
		return 0;
	while (is_lower((unsigned char)*p))
		p++;
	if (!is_digit((unsigned char)*p))
		return 0;
	while (is_digit((unsigned char)*p))
		p++;
	return *p == '\0' && p - s <= 40;
}

/* A zone: a region and "-" and a letter: us-central1-a. */
static int zone_valid(const char *s)
{
	size_t n = strlen(s);
	char region[48];

	if (n < 4 || n >= sizeof(region) || s[n - 2] != '-' || !is_lower((unsigned char)s[n - 1]))
		return 0;
	memcpy(region, s, n - 2);
	region[n - 2] = '\0';
	return region_valid(region);
}

/* A project ID: 6 to 30 of [a-z0-9-], starting with a letter, not ending with
 * "-"; optionally domain-scoped ("example.com:my-project"). */
static int project_valid(const char *s)
{
	const char *colon = strrchr(s, ':');
	size_t n;

	if (colon) {
		for (const char *p = s; p < colon; p++)
			if (!is_lower((unsigned char)*p) && !is_digit((unsigned char)*p) &&
			    *p != '.' && *p != '-')
				return 0;
		if (colon == s)
			return 0;
		s = colon + 1;
	}
	n = strlen(s);
	if (n < 6 || n > 30 || !is_lower((unsigned char)s[0]) || s[n - 1] == '-')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!is_lower((unsigned char)s[i]) && !is_digit((unsigned char)s[i]) && s[i] != '-')
			return 0;
	return 1;
}

/*
 * A branch name by git's rules (git-check-ref-format(1) for refs/heads/NAME,
 * plus git branch's own: not starting with "-", not "HEAD"): components
 * between "/" not empty, not starting with "." and not ending with ".lock";
 * no "..", "@{", control characters, space, "~^:?*[\\"; not ending with "."
 * or "/". Written out rather than asking libgit2 because reconcile/
 * does not depend on it (validate needs no repository); the git backend asks
 * libgit2 again when it opens, and test_stack compares the two.
 */
static int branch_valid(const char *s)
{
	size_t n = strlen(s);
	const char *c;

	if (n == 0 || n > 200 || s[0] == '-' || s[n - 1] == '/' || s[n - 1] == '.' ||
	    strstr(s, "..") || strstr(s, "@{") || !strcmp(s, "HEAD"))
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch <= ' ' || ch == 0x7f || strchr("~^:?*[\\", ch))
			return 0;
	}
	for (c = s;; c++) {
		const char *end = strchr(c, '/');
		size_t len = end ? (size_t)(end - c) : strlen(c);

		if (len == 0 || c[0] == '.' || (len >= 5 && !strncmp(c + len - 5, ".lock", 5)))
			return 0;
		if (!end)
			return 1;
		c = end;
	}
}

/* Number of UTF-8 code points (the input is valid UTF-8). */
static size_t utf8_len(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			n++;
	return n;
}

/* ---------------------------------------------------------------------- */
/* The loader's context and error reporting */

struct doc {
	struct ynode *root;
	int kind;
};

/*
 * The names declared so far in one name space: an open-addressing hash
 * table (so checking N names is linear, not quadratic), emptied when a
 * pass starts again with *nseen = 0 (check_unique).
 */
struct seen_slot {
	const char *name;   /* borrowed from the YAML tree; NULL: free slot */
	const char *file;
	unsigned line, col;
};

struct seen {
	struct seen_slot *slots;
	size_t cap;         /* a power of two, over twice the documents */
};

struct loader {
	struct vx_diags *diags;
	struct vx_err *err;
	int rc;             /* first hard failure (VX_ENOMEM), 0 otherwise */
	size_t nerr;        /* diagnostics added (dropped ones included) */
	int stack_region;   /* the Stack document writes a region (valid or not) */
	int unparsed;       /* some file did not parse (so a missing Stack may be in it) */
	char prefix[160];   /* "CustomJob \"a\": " for the document being read */
};

static void set_prefix(struct loader *L, int kind, const char *name)
{
	if (name)
		snprintf(L->prefix, sizeof(L->prefix), "%s \"%.100s\": ", kind_names[kind], name);
	else
		snprintf(L->prefix, sizeof(L->prefix), "%s: ", kind_names[kind]);
}

static void oom(struct loader *L)
{
	if (!L->rc)
		L->rc = vx_err_set(L->err, VX_ENOMEM, "loading the stack: out of memory");
}

/* Adds "<prefix><message>" at node at's position (or the file alone when at is NULL). */
VX_PRINTF(4, 5)
static void lerr_at(struct loader *L, const char *file, const struct ynode *at, const char *fmt, ...)
{
	struct vx_buf b = VX_BUF_INIT;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vx_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	L->nerr++;
	if (rc < 0 || vx_diags_add(L->diags, at ? at->file : file, at ? at->line : 0,
				   at ? at->col : 0, "%s%s", L->prefix, vx_buf_str(&b)) < 0)
		oom(L);
	vx_buf_release(&b);
}

#define lerr(L, at, ...) lerr_at((L), NULL, (at), __VA_ARGS__)

/* Formats ", " separated candidates into b (for "one of a, b, c"). */
static const char *join_words(struct vx_buf *b, const char *const *words, size_t n)
{
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0; i++)
		rc = vx_buf_printf(b, "%s%s", i ? ", " : "", words[i]);
	return vx_buf_str(b);
}

/* "unknown value "x" (did you mean "y"?)" or "unknown value "x" (one of a, b)". */
static void unknown_word(struct loader *L, const struct ynode *at, const char *path,
			 const char *what, const char *const *words, size_t n)
{
	const char *s = vx_suggest(at->str, words, n);
	struct vx_buf b = VX_BUF_INIT;

	if (s)
		lerr(L, at, "%s%sunknown %s \"%s\" (did you mean \"%s\"?)", path, *path ? ": " : "",
		     what, at->str, s);
	else
		lerr(L, at, "%s%sunknown %s \"%s\" (one of %s)", path, *path ? ": " : "", what,
		     at->str, join_words(&b, words, n));
	vx_buf_release(&b);
}

/* Reports every key of map not in keys. path is "" at the top of a document. */
static void check_keys(struct loader *L, const struct ynode *map, const char *path,
		       const char *const *keys, size_t n)
{
	for (size_t i = 0; i < map->n; i++) {
		const struct ynode *k = map->pairs[i].key;
		size_t j;

		for (j = 0; j < n; j++)
			if (!strcmp(k->str, keys[j]))
				break;
		if (j == n)
			unknown_word(L, k, path, "field", keys, n);
	}
}

static const char *type_of(const struct ynode *n)
{
	const char *t = ynode_type_name(n);

	return t ? t : "value";
}

static const char *article(const char *t)
{
	return strchr("aeiou", t[0]) ? "an" : "a";
}

static void wrong_type(struct loader *L, const struct ynode *at, const char *path,
		       const char *want)
{
	const char *got = type_of(at);
	struct ynode_why why;

	/* One wording for every string field, here and in the spec. */
	if (!strcmp(want, "string") && ynode_want_string(&why, at) < 0)
		lerr(L, at, "%s: %s", path, why.s);
	else
		lerr(L, at, "%s: expected %s %s, got %s %s", path, article(want), want,
		     article(got), got);
}

/* The value node for key when present and not null, else NULL. */
static const struct ynode *field(const struct ynode *map, const char *key)
{
	const struct ynode *v = ynode_get(map, key);

	if (!v || (v->kind == YNODE_SCALAR && ynode_is_null(v)))
		return NULL;
	return v;
}

static void missing(struct loader *L, const struct ynode *map, const char *path, const char *key)
{
	const struct ynode *k = ynode_get_key(map, key);

	/* present but null: say so where it is written */
	if (k)
		lerr(L, ynode_get(map, key), "%s%s%s: a value is required", path, *path ? "." : "",
		     key);
	else if (*path)
		lerr(L, map, "%s: missing required field \"%s\"", path, key);
	else
		lerr(L, map, "missing required field \"%s\"", key);
}

static int is_string(const struct ynode *n)
{
	return n->kind == YNODE_SCALAR && !strcmp(type_of(n), "string");
}

/* The longest "path.key" the get_* functions name in their messages (cut beyond). */
#define FULL_MAX 96

/*
 * The start of every get_*: the value of key (NULL when absent or null,
 * reported when required), *node set to it (when node is not NULL), and
 * full set to "path.key" ("key" at the top of a document).
 */
static const struct ynode *get_field(struct loader *L, const struct ynode *map, const char *path,
				     const char *key, int required, const struct ynode **node,
				     char full[FULL_MAX])
{
	const struct ynode *v = field(map, key);

	if (node)
		*node = v;
	snprintf(full, FULL_MAX, "%s%s%s", path, *path ? "." : "", key);
	if (!v && required)
		missing(L, map, path, key);
	return v;
}

/* A string field: 1 with *out set (borrowed) when present and a string; 0 when
 * absent (reported if required) or wrong (reported). */
static int get_str(struct loader *L, const struct ynode *map, const char *path, const char *key,
		   int required, const struct ynode **node, const char **out)
{
	const struct ynode *v;
	char full[FULL_MAX];

	*out = NULL;
	v = get_field(L, map, path, key, required, node, full);
	if (!v)
		return 0;
	if (!is_string(v)) {
		wrong_type(L, v, full, "string");
		return 0;
	}
	if (memchr(v->str, '\0', v->len) || v->len != strlen(v->str)) {
		lerr(L, v, "%s: contains a NUL character", full);
		return 0;
	}
	*out = v->str;
	return 1;
}

/* An integer field (a plain integer, or a string holding one), in decimal. */
static int get_int(struct loader *L, const struct ynode *map, const char *path, const char *key,
		   int required, const struct ynode **node, int64_t *out)
{
	const struct ynode *v;
	struct ynode_why why;
	char full[FULL_MAX];

	v = get_field(L, map, path, key, required, node, full);
	if (!v)
		return 0;
	if (ynode_int(out, &why, v, INT64_MIN, INT64_MAX) < 0) {
		lerr(L, v, "%s: %s", full, why.s);
		return 0;
	}
	return 1;
}

static int get_bool(struct loader *L, const struct ynode *map, const char *path, const char *key,
		    int *out)
{
	const struct ynode *v;
	char full[FULL_MAX];

	v = get_field(L, map, path, key, 0, NULL, full);
	if (!v)
		return 0;
	if (v->kind != YNODE_SCALAR || strcmp(type_of(v), "boolean")) {
		wrong_type(L, v, full, "boolean");
		return 0;
	}
	*out = v->str[0] == 't' || v->str[0] == 'T';
	return 1;
}

/* An enum field: *out = 1 + index into words. */
static int get_enum(struct loader *L, const struct ynode *map, const char *key,
		    const char *const *words, size_t n, int *out)
{
	const struct ynode *v;
	const char *s;

	if (!get_str(L, map, "", key, 0, &v, &s))
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(s, words[i])) {
			*out = (int)i + 1;
			return 1;
		}
	}
	unknown_word(L, v, key, "value", words, n);
	return 0;
}

/* A map that must be a mapping node (reported otherwise); NULL when absent. */
static const struct ynode *get_map(struct loader *L, const struct ynode *map, const char *key,
				   const char *path)
{
	const struct ynode *v = field(map, key);

	if (v && v->kind != YNODE_MAP) {
		wrong_type(L, v, path, "mapping");
		return NULL;
	}
	return v;
}

/* ---------------------------------------------------------------------- */
/* Labels and string maps */

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct stack_label *)a)->key, ((const struct stack_label *)b)->key);
}

const char *stack_labels_get(const struct stack_labels *l, const char *key)
{
	struct stack_label k = { (char *)(uintptr_t)key, NULL }, *hit;

	if (!l->n)
		return NULL;
	hit = bsearch(&k, l->items, l->n, sizeof(*l->items), label_cmp);
	return hit ? hit->value : NULL;
}

static void labels_release(struct stack_labels *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->items[i].key);
		free(l->items[i].value);
	}
	free(l->items);
	l->items = NULL;
	l->n = 0;
}

/* Sets key to value (copies), replacing an existing entry; keeps the order sorted. */
static int labels_set(struct stack_labels *l, const char *key, const char *value)
{
	struct stack_label *p;
	char *k = NULL, *v = NULL;
	size_t i;

	for (i = 0; i < l->n; i++) {
		if (!strcmp(l->items[i].key, key)) {
			v = strdup(value);
			if (!v)
				return VX_ENOMEM;
			free(l->items[i].value);
			l->items[i].value = v;
			return 0;
		}
	}
	p = realloc(l->items, (l->n + 1) * sizeof(*p));
	if (!p)
		return VX_ENOMEM;
	l->items = p;
	k = strdup(key);
	v = strdup(value);
	if (!k || !v) {
		free(k);
		free(v);
		return VX_ENOMEM;
	}
	l->items[l->n].key = k;
	l->items[l->n].value = v;
	l->n++;
	qsort(l->items, l->n, sizeof(*l->items), label_cmp);
	return 0;
}

/*
 * Reads a map of strings (labels: with the label rules; dimensions: any
 * non-empty key). Scalars of any type are taken as written (version: 2),
 * since label values are text.
 */
static void read_string_map(struct loader *L, const struct ynode *map, const char *key,
			    int labels, struct stack_labels *out)
{
	const struct ynode *m = get_map(L, map, key, key);

	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		const struct ynode *k = m->pairs[i].key, *v = m->pairs[i].value;
		const char *val;

		if (v->kind != YNODE_SCALAR) {
			lerr(L, v, "%s.%s: expected a string, got a %s", key, k->str, type_of(v));
			continue;
		}
		/* `team:` or `team: null` is no value, not "": refuse it rather
		 * than guess (an empty label value is written ""). */
		if (ynode_is_null(v)) {
			lerr(L, v, "%s.%s: expected a string, got null%s", key, k->str,
			     labels ? " (write \"\" for an empty value)" : "");
			continue;
		}
		val = v->str;
		if (labels) {
			if (!label_key_valid(k->str)) {
				lerr(L, k, "%s: key \"%s\" is not valid: use lowercase letters, digits, "
				     "\"_\" and \"-\", starting with a letter, at most 64 characters",
				     key, k->str);
				continue;
			}
			if (!strncmp(k->str, "vx-", 3)) {
				lerr(L, k, "%s: key \"%s\" is reserved: keys starting with \"vx-\" "
				     "belong to vx", key, k->str);
				continue;
			}
			if (!label_value_valid(val)) {
				lerr(L, v, "%s.%s: value \"%s\" is not valid: use lowercase letters, "
				     "digits, \"_\" and \"-\", at most 64 characters", key, k->str, val);
				continue;
			}
		} else {
			if (k->str[0] == '\0') {
				lerr(L, k, "%s: empty key", key);
				continue;
			}
			if (!strcmp(k->str, "user") || !strcmp(k->str, "resource")) {
				lerr(L, k, "%s: the \"%s\" dimension may not be set", key, k->str);
				continue;
			}
			if (val[0] == '\0') {
				lerr(L, v, "%s.%s: empty value", key, k->str);
				continue;
			}
		}
		if (labels_set(out, k->str, val) < 0) {
			oom(L);
			return;
		}
	}
	if (labels && out->n > STACK_MAX_USER_LABELS)
		lerr(L, m, "%s: %zu labels, at most %d (vx adds 6 of its own to Vertex's 64)", key,
		     out->n, STACK_MAX_USER_LABELS);
}

/* ---------------------------------------------------------------------- */
/* Names and duplicates */

/* Reads `name` with the rule of its kind; sets the message prefix. */
static const char *read_name(struct loader *L, const struct ynode *doc, int kind)
{
	const struct ynode *v;
	const char *name;
	int ok;

	set_prefix(L, kind, NULL);
	if (!get_str(L, doc, "", "name", 1, &v, &name))
		return NULL;
	set_prefix(L, kind, name);
	if (kind == KIND_STACK || kind == KIND_JOB) {
		ok = stack_name_valid(name);
		if (!ok)
			lerr(L, v, "name: \"%s\" is not a valid name: use lowercase letters, digits, "
			     "\"-\" and \"_\", starting with a letter, at most 63 characters", name);
	} else {
		ok = rfc1035_valid(name);
		if (!ok)
			lerr(L, v, "name: \"%s\" is not a valid name: use lowercase letters, digits "
			     "and \"-\", starting with a letter and not ending with \"-\", at most "
			     "63 characters", name);
	}
	return ok ? name : NULL;
}

/* 1 when name is new (recorded), 0 when a duplicate (reported). */
static int check_unique(struct loader *L, struct seen *seen, size_t *nseen, const char *name,
			const struct ynode *doc)
{
	const struct ynode *at = ynode_get(doc, "name");
	uint64_t h = 1469598103934665603u; /* FNV-1a */
	struct seen_slot *s;
	size_t i;

	if (*nseen == 0)
		memset(seen->slots, 0, seen->cap * sizeof(*seen->slots));
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211u;
	for (i = (size_t)h & (seen->cap - 1); seen->slots[i].name; i = (i + 1) & (seen->cap - 1)) {
		s = &seen->slots[i];
		if (!strcmp(s->name, name)) {
			lerr(L, at, "name: duplicate: \"%s\" is already declared at %s:%u:%u", name,
			     s->file, s->line, s->col);
			return 0;
		}
	}
	s = &seen->slots[i];
	s->name = name;
	s->file = at->file;
	s->line = at->line;
	s->col = at->col;
	(*nseen)++;
	return 1;
}

/* A table for ndocs names (see struct seen), or NULL. */
static struct seen *seen_new(size_t ndocs)
{
	struct seen *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	for (t->cap = 16; t->cap / 2 <= ndocs; t->cap *= 2)
		;
	t->slots = calloc(t->cap, sizeof(*t->slots));
	if (!t->slots) {
		free(t);
		return NULL;
	}
	return t;
}

static void seen_free(struct seen *t)
{
	if (t)
		free(t->slots);
	free(t);
}

static int decl_init(struct loader *L, struct stack_decl *d, const char *prefix, const char *name,
		     const struct ynode *doc)
{
	d->name = strdup(name);
	d->address = vx_asprintf("%s.%s", prefix, name);
	d->file = strdup(doc->file);
	d->line = doc->line;
	d->col = doc->col;
	if (!d->name || !d->address || !d->file) {
		oom(L);
		return -1;
	}
	return 0;
}

static void decl_release(struct stack_decl *d)
{
	free(d->name);
	free(d->address);
	free(d->file);
}

/* strdup of an optional borrowed string, recording OOM. */
static char *dup_opt(struct loader *L, const char *s)
{
	char *r;

	if (!s)
		return NULL;
	r = strdup(s);
	if (!r)
		oom(L);
	return r;
}

/* ---------------------------------------------------------------------- */
/* Stack */

/*
 * The optional region of a Stack or a job: 1 when present as a string, with
 * *out its copy (left alone when not a region: reported); 0 otherwise. *node
 * is the value (NULL when absent).
 */
static int get_region(struct loader *L, const struct ynode *doc, const struct ynode **node,
		      char **out)
{
	const char *s;

	if (!get_str(L, doc, "", "region", 0, node, &s))
		return 0;
	if (!region_valid(s))
		lerr(L, *node, "region: \"%s\" is not a region (like \"us-central1\")", s);
	else
		*out = dup_opt(L, s);
	return 1;
}

static void read_state(struct loader *L, struct stack *st, const struct ynode *doc)
{
	const struct ynode *m = get_map(L, doc, "state", "state"), *v;
	struct stack_state_cfg *sc = &st->state;
	const char *s;
	int e;

	sc->backend = STACK_BACKEND_GIT;
	if (m) {
		check_keys(L, m, "state", state_keys, ARRAY_SIZE(state_keys));
		v = field(m, "backend");
		if (v) {
			if (!is_string(v)) {
				wrong_type(L, v, "state.backend", "string");
			} else {
				for (e = 0; e < (int)ARRAY_SIZE(backend_names); e++)
					if (!strcmp(v->str, backend_names[e]))
						break;
				if (e < (int)ARRAY_SIZE(backend_names))
					sc->backend = (enum stack_backend)(e + 1);
				else
					unknown_word(L, v, "state.backend", "value", backend_names,
						     ARRAY_SIZE(backend_names));
			}
		}
		if (get_str(L, m, "state", "path", 0, &v, &s)) {
			if (!*s)
				lerr(L, v, "state.path: empty");
			else
				sc->path = dup_opt(L, s);
		}
		if (get_str(L, m, "state", "remote", 0, &v, &s)) {
			if (sc->backend != STACK_BACKEND_GIT)
				lerr(L, v, "state.remote: only for backend git");
			else if (!*s || strchr(s, ' '))
				lerr(L, v, "state.remote: \"%s\" is not a remote name or URL", s);
			else
				sc->remote = dup_opt(L, s);
		}
		if (get_str(L, m, "state", "branch", 0, &v, &s)) {
			if (sc->backend != STACK_BACKEND_GIT)
				lerr(L, v, "state.branch: only for backend git");
			else if (!strncmp(s, "refs/heads/", 11))
				/* vx adds refs/heads/ itself */
				lerr(L, v, "state.branch: \"%s\" is a ref name: give the branch name "
				     "without refs/heads/ (\"%s\")", s, s + 11);
			else if (!strncmp(s, "refs/", 5))
				lerr(L, v, "state.branch: \"%s\" is a ref name, not a branch name: give "
				     "the branch name without refs/heads/", s);
			else if (!branch_valid(s))
				lerr(L, v, "state.branch: \"%s\" is not a valid branch name", s);
			else
				sc->branch = dup_opt(L, s);
		}
		if (get_str(L, m, "state", "bucket", 0, &v, &s)) {
			if (sc->backend != STACK_BACKEND_GCS)
				lerr(L, v, "state.bucket: only for backend gcs");
			else if (!*s || !strncmp(s, "gs://", 5) || strchr(s, '/'))
				lerr(L, v, "state.bucket: \"%s\" is not a bucket name (write it without "
				     "gs:// and without a path)", s);
			else
				sc->bucket = dup_opt(L, s);
		}
	}
	/* Like Terraform's local backend and its terraform.tfstate: a file
	 * beside the stack, relative to the stack directory as any path is. */
	if (sc->backend == STACK_BACKEND_FILE && !sc->path && !(m && field(m, "path"))) {
		sc->path = vx_strdup(STACK_STATE_FILE_DEFAULT);
		if (!sc->path)
			oom(L);
	}
	if (sc->backend == STACK_BACKEND_GCS && !sc->bucket && !(m && ynode_get(m, "bucket")))
		lerr(L, m ? m : doc, "state: backend gcs needs \"bucket\"");
	if (sc->backend == STACK_BACKEND_GIT && !sc->branch && st->name) {
		sc->branch = vx_asprintf("vx/state/%s", st->name);
		if (!sc->branch)
			oom(L);
	}
}

static void read_stack(struct loader *L, struct stack *st, const struct ynode *doc)
{
	const struct ynode *v;
	const char *name, *s;

	name = read_name(L, doc, KIND_STACK);
	check_keys(L, doc, "", stack_keys, ARRAY_SIZE(stack_keys));
	if (name) {
		if (decl_init(L, &st->d, "stack", name, doc) < 0)
			return;
		st->name = dup_opt(L, name);
	}
	if (get_str(L, doc, "", "project", 1, &v, &s)) {
		if (!project_valid(s))
			lerr(L, v, "project: \"%s\" is not a project ID (6 to 30 lowercase letters, "
			     "digits and \"-\", starting with a letter)", s);
		else
			st->project = dup_opt(L, s);
	}
	L->stack_region = field(doc, "region") != NULL;
	(void)get_region(L, doc, &v, &st->region);
	read_state(L, st, doc);
	read_string_map(L, doc, "labels", 1, &st->labels);
}

/* ---------------------------------------------------------------------- */
/* Reservation */

static void reservation_release(struct stack_reservation *r)
{
	decl_release(&r->d);
	free(r->zone);
	free(r->machine_type);
	for (size_t i = 0; i < r->naccelerators; i++)
		free(r->accelerators[i].type);
	free(r->accelerators);
	free(r->description);
}

static void read_accelerators(struct loader *L, struct stack_reservation *r,
			      const struct ynode *doc)
{
	const struct ynode *seq = field(doc, "accelerators");

	if (!seq)
		return;
	if (seq->kind != YNODE_SEQ) {
		wrong_type(L, seq, "accelerators", "sequence");
		return;
	}
	if (seq->n > 1) {
		lerr(L, seq->items[1], "accelerators: one accelerator type per reservation "
		     "(GPU machine types take one)");
		return;
	}
	if (seq->n == 0)
		return;
	r->accelerators = calloc(1, sizeof(*r->accelerators));
	if (!r->accelerators) {
		oom(L);
		return;
	}
	for (size_t i = 0; i < seq->n; i++) {
		const struct ynode *a = seq->items[i], *tv, *cv;
		const char *type;
		int64_t count = 0;
		char path[48];
		int ok = 1;

		snprintf(path, sizeof(path), "accelerators[%zu]", i);
		if (a->kind != YNODE_MAP) {
			wrong_type(L, a, path, "mapping");
			continue;
		}
		check_keys(L, a, path, accel_keys, ARRAY_SIZE(accel_keys));
		if (get_str(L, a, path, "type", 1, &tv, &type)) {
			if (!machines_gpu_by_compute(type)) {
				const char *hint = machines_suggest_compute(type);

				if (hint)
					lerr(L, tv, "%s.type: unknown accelerator type \"%s\" (did you "
					     "mean \"%s\"?)", path, type, hint);
				else
					lerr(L, tv, "%s.type: unknown accelerator type \"%s\" (Compute "
					     "Engine names, like \"nvidia-h100-80gb\")", path, type);
				ok = 0;
			}
		} else {
			ok = 0;
		}
		if (get_int(L, a, path, "count", 1, &cv, &count)) {
			if (count < 1) {
				lerr(L, cv, "%s.count: must be at least 1, got %lld", path,
				     (long long)count);
				ok = 0;
			}
		} else {
			ok = 0;
		}
		if (!ok)
			continue;
		r->accelerators[r->naccelerators].type = dup_opt(L, type);
		r->accelerators[r->naccelerators].count = count;
		r->naccelerators++;
	}
}

static int read_reservation(struct loader *L, struct stack_reservation *r, const struct ynode *doc,
			    struct seen *seen, size_t *nseen)
{
	const struct ynode *v, *mv = NULL;
	const char *name, *s;
	size_t before = L->nerr;
	int64_t x;

	name = read_name(L, doc, KIND_RESERVATION);
	check_keys(L, doc, "", reservation_keys, ARRAY_SIZE(reservation_keys));
	if (name && check_unique(L, seen, nseen, name, doc) &&
	    decl_init(L, &r->d, "reservation", name, doc) < 0)
		return -1;
	if (get_str(L, doc, "", "zone", 1, &v, &s)) {
		if (!zone_valid(s))
			lerr(L, v, "zone: \"%s\" is not a zone (like \"us-central1-a\")", s);
		else
			r->zone = dup_opt(L, s);
	}
	if (get_str(L, doc, "", "machineType", 1, &mv, &s)) {
		if (!rfc1035_valid(s))
			lerr(L, mv, "machineType: \"%s\" is not a machine type (like \"a3-highgpu-8g\")",
			     s);
		else
			r->machine_type = dup_opt(L, s);
	}
	read_accelerators(L, r, doc);
	/* The reservation's shape must be one Vertex can run: reuse the machine table. */
	if (r->machine_type && L->nerr == before) {
		const struct machines_gpu *gpu =
			r->naccelerators ? machines_gpu_by_compute(r->accelerators[0].type) : NULL;
		enum machines_field f = MACHINES_FIELD_MACHINE_TYPE;
		char *msg = NULL;
		int rc = machines_check(r->machine_type, gpu ? gpu->vertex : NULL,
					r->naccelerators ? r->accelerators[0].count : 0, &msg, &f);

		if (rc == VX_ENOMEM) {
			oom(L);
		} else if (rc < 0) {
			const struct ynode *acc = field(doc, "accelerators");

			lerr(L, f == MACHINES_FIELD_MACHINE_TYPE || !acc ? mv : acc, "%s: %s",
			     f == MACHINES_FIELD_MACHINE_TYPE || !acc ? "machineType" : "accelerators",
			     msg ? msg : "machine type and accelerators do not match");
		}
		free(msg);
	}
	r->count = 0;
	if (get_int(L, doc, "", "count", 1, &v, &x)) {
		if (x < 1 || x > 1000)
			lerr(L, v, "count: must be between 1 and 1000, got %lld", (long long)x);
		else
			r->count = x;
	}
	r->specific_required = 1;
	(void)get_bool(L, doc, "", "specificReservationRequired", &r->specific_required);
	(void)get_bool(L, doc, "", "protect", &r->protect);
	if (get_str(L, doc, "", "description", 0, &v, &s))
		r->description = dup_opt(L, s);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* QuotaPreference */

static void quota_release(struct stack_quota *q)
{
	decl_release(&q->d);
	free(q->service);
	free(q->quota_id);
	labels_release(&q->dimensions);
	free(q->contact_email);
	free(q->justification);
}

static int email_valid(const char *s)
{
	const char *at = strchr(s, '@');

	return at && at != s && !strchr(at + 1, '@') && strchr(at + 1, '.') && !strchr(s, ' ') &&
	       at[1] != '.' && s[strlen(s) - 1] != '.';
}

static int read_quota(struct loader *L, struct stack_quota *q, const struct ynode *doc,
		      struct seen *seen, size_t *nseen)
{
	const struct ynode *v;
	const char *name, *s;
	int64_t x;

	name = read_name(L, doc, KIND_QUOTA);
	check_keys(L, doc, "", quota_keys, ARRAY_SIZE(quota_keys));
	if (name && check_unique(L, seen, nseen, name, doc) &&
	    decl_init(L, &q->d, "quota", name, doc) < 0)
		return -1;
	if (get_str(L, doc, "", "service", 1, &v, &s)) {
		size_t n = strlen(s), suf = strlen(".googleapis.com");

		if (n <= suf || strcmp(s + n - suf, ".googleapis.com"))
			lerr(L, v, "service: \"%s\" is not a service name (like "
			     "\"aiplatform.googleapis.com\")", s);
		else
			q->service = dup_opt(L, s);
	}
	if (get_str(L, doc, "", "quotaId", 1, &v, &s)) {
		int ok = *s != '\0';

		for (const char *p = s; *p; p++)
			if (!is_lower((unsigned char)*p) && !is_digit((unsigned char)*p) &&
			    !(*p >= 'A' && *p <= 'Z') && *p != '-' && *p != '_')
				ok = 0;
		if (!ok)
			lerr(L, v, "quotaId: \"%s\" is not a quota ID (like "
			     "\"CustomModelTrainingH100GPUsPerProjectPerRegion\")", s);
		else
			q->quota_id = dup_opt(L, s);
	}
	read_string_map(L, doc, "dimensions", 0, &q->dimensions);
	if (get_int(L, doc, "", "preferredValue", 1, &v, &x)) {
		if (x < -1)
			lerr(L, v, "preferredValue: must be -1 (unlimited) or more, got %lld",
			     (long long)x);
		else
			q->preferred_value = x;
	}
	if (get_str(L, doc, "", "contactEmail", 0, &v, &s)) {
		if (!email_valid(s))
			lerr(L, v, "contactEmail: \"%s\" is not an email address", s);
		else
			q->contact_email = dup_opt(L, s);
	}
	if (get_str(L, doc, "", "justification", 0, &v, &s))
		q->justification = dup_opt(L, s);
	(void)get_bool(L, doc, "", "ignoreSafetyChecks", &q->ignore_safety_checks);
	return 0;
}

/* Google keeps one preference per service, quota and dimensions. */
static int dims_equal(const struct stack_labels *a, const struct stack_labels *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->items[i].key, b->items[i].key) ||
		    strcmp(a->items[i].value, b->items[i].value))
			return 0;
	return 1;
}

/* ---------------------------------------------------------------------- */
/* CustomJob */

static void job_release(struct stack_job *j)
{
	decl_release(&j->d);
	free(j->region);
	free(j->display_name);
	labels_release(&j->labels);
	job_spec_release(&j->spec);
}

static void read_resubmit(struct loader *L, struct stack_job *j, const struct ynode *doc)
{
	const struct ynode *m = get_map(L, doc, "resubmit", "resubmit"), *on, *v;
	int64_t x;

	j->max_attempts = 1;
	j->resubmit_on = 0;
	if (!m)
		return;
	check_keys(L, m, "resubmit", resubmit_keys, ARRAY_SIZE(resubmit_keys));
	on = field(m, "on");
	if (on && on->kind != YNODE_SEQ) {
		wrong_type(L, on, "resubmit.on", "sequence");
	} else if (on) {
		for (size_t i = 0; i < on->n; i++) {
			const struct ynode *it = on->items[i];
			char path[48];
			unsigned bit;

			snprintf(path, sizeof(path), "resubmit.on[%zu]", i);
			if (!is_string(it)) {
				wrong_type(L, it, path, "string");
				continue;
			}
			bit = stack_fail_parse(it->str);
			if (!bit)
				unknown_word(L, it, path, "failure class", stack_fail_names,
					     STACK_FAIL_NCLASSES);
			j->resubmit_on |= bit;
		}
	}
	if (get_int(L, m, "resubmit", "maxAttempts", 0, &v, &x)) {
		if (x < 1 || x > STACK_MAX_ATTEMPTS)
			lerr(L, v, "resubmit.maxAttempts: must be between 1 and %d, got %lld",
			     STACK_MAX_ATTEMPTS, (long long)x);
		else
			j->max_attempts = x;
	}
}

/* Runs spec_check, giving each of its diagnostics this job's prefix. */
static void check_spec(struct loader *L, struct stack_job *j, const struct ynode *spec,
		       const struct spec_env *env)
{
	struct vx_diags sub = VX_DIAGS_INIT;
	int rc;

	sub.cap = L->diags->cap;
	rc = spec_check(&j->spec, spec, env, &sub);
	if (rc == VX_ENOMEM) {
		oom(L);
	} else {
		for (size_t i = 0; i < sub.n; i++) {
			L->nerr++;
			if (vx_diags_add(L->diags, sub.items[i].file, sub.items[i].line,
					 sub.items[i].col, "%s%s", L->prefix, sub.items[i].msg) < 0)
				oom(L);
		}
		L->nerr += sub.dropped;
		L->diags->dropped += sub.dropped;
		if (rc < 0 && sub.n == 0)
			lerr(L, spec, "spec: not valid");
	}
	if (rc < 0)
		job_spec_release(&j->spec);
	vx_diags_release(&sub);
}

static int read_job(struct loader *L, struct stack_job *j, const struct ynode *doc,
		    const struct stack *st, const struct spec_env *env_base, struct seen *seen,
		    size_t *nseen)
{
	struct stack_labels own = { NULL, 0 };
	struct spec_env env = *env_base;
	const struct ynode *v, *spec;
	const char *name, *s;
	int e = 0;
	int64_t x;

	name = read_name(L, doc, KIND_JOB);
	check_keys(L, doc, "", job_keys, ARRAY_SIZE(job_keys));
	if (name && check_unique(L, seen, nseen, name, doc) &&
	    decl_init(L, &j->d, "job", name, doc) < 0)
		return -1;
	if (!get_region(L, doc, &v, &j->region) && !v) {
		if (st->region)
			j->region = dup_opt(L, st->region);
		else if (st->d.name && !L->stack_region)
			lerr(L, doc, "region: not set, and the Stack sets no default region");
	}
	if (get_str(L, doc, "", "displayName", 0, &v, &s)) {
		if (!*s || utf8_len(s) > STACK_MAX_DISPLAY_NAME)
			lerr(L, v, "displayName: must be 1 to %d characters", STACK_MAX_DISPLAY_NAME);
		else
			j->display_name = dup_opt(L, s);
	} else if (!v && name) {
		j->display_name = dup_opt(L, name);
	}
	/* merged labels: the Stack's, overlaid by the job's own */
	for (size_t i = 0; i < st->labels.n; i++)
		if (labels_set(&j->labels, st->labels.items[i].key, st->labels.items[i].value) < 0)
			oom(L);
	read_string_map(L, doc, "labels", 1, &own);
	for (size_t i = 0; i < own.n; i++)
		if (labels_set(&j->labels, own.items[i].key, own.items[i].value) < 0)
			oom(L);
	if (own.n <= STACK_MAX_USER_LABELS && j->labels.n > STACK_MAX_USER_LABELS) {
		v = field(doc, "labels");
		lerr(L, v ? v : doc, "labels: %zu labels with the Stack's, at most %d (vx adds 6 "
		     "of its own to Vertex's 64)", j->labels.n, STACK_MAX_USER_LABELS);
	}
	labels_release(&own);
	j->run = 1;
	if (get_int(L, doc, "", "run", 0, &v, &x)) {
		if (x < 1)
			lerr(L, v, "run: must be at least 1, got %lld", (long long)x);
		else
			j->run = x;
	}
	read_resubmit(L, j, doc);
	j->on_change = STACK_ON_CHANGE_REPLACE;
	if (get_enum(L, doc, "onChange", on_change_names, ARRAY_SIZE(on_change_names), &e))
		j->on_change = (enum stack_on_change)e;
	(void)get_bool(L, doc, "", "protect", &j->protect);
	spec = field(doc, "spec");
	if (!spec) {
		missing(L, doc, "", "spec");
	} else if (spec->kind != YNODE_MAP) {
		wrong_type(L, spec, "spec", "mapping");
	} else {
		env.region = j->region ? j->region : st->region;
		check_spec(L, j, spec, &env);
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Canonical forms and hashes */

/* ,"key":"value" (null when value is NULL) */
static int json_kv(struct vx_buf *b, const char *key, const char *value)
{
	int rc = vx_buf_printf(b, ",\"%s\":", key);

	if (rc == 0)
		rc = value ? vx_buf_add_json_str(b, value) : vx_buf_adds(b, "null");
	return rc;
}

static int json_map(struct vx_buf *b, const char *key, const struct stack_labels *l)
{
	int rc = vx_buf_printf(b, ",\"%s\":{", key);

	for (size_t i = 0; i < l->n && rc == 0; i++) {
		rc = i ? vx_buf_addc(b, ',') : 0;
		if (rc == 0)
			rc = vx_buf_add_json_str(b, l->items[i].key);
		if (rc == 0)
			rc = vx_buf_addc(b, ':');
		if (rc == 0)
			rc = vx_buf_add_json_str(b, l->items[i].value);
	}
	return rc ? rc : vx_buf_addc(b, '}');
}

/* Hashes b into d->hash and resets b. Keys are written in sorted order. */
static int decl_hash(struct vx_buf *b, struct stack_decl *d)
{
	int rc = vx_buf_addc(b, '}');

	if (rc == 0)
		rc = vx_digest_sha256_hex(d->hash, b->data, b->len);
	vx_buf_reset(b);
	return rc;
}

static int hash_stack_decl(struct vx_buf *b, struct stack *st)
{
	const struct stack_state_cfg *sc = &st->state;
	int rc = vx_buf_adds(b, "{\"address\":");

	if (rc == 0)
		rc = vx_buf_add_json_str(b, st->d.address);
	if (rc == 0)
		rc = json_map(b, "labels", &st->labels);
	if (rc == 0)
		rc = json_kv(b, "project", st->project);
	if (rc == 0)
		rc = json_kv(b, "region", st->region);
	if (rc == 0)
		rc = vx_buf_adds(b, ",\"state\":{\"backend\":");
	if (rc == 0)
		rc = vx_buf_add_json_str(b, stack_backend_name(sc->backend));
	if (rc == 0)
		rc = json_kv(b, "branch", sc->branch);
	if (rc == 0)
		rc = json_kv(b, "bucket", sc->bucket);
	if (rc == 0)
		rc = json_kv(b, "path", sc->path);
	if (rc == 0)
		rc = json_kv(b, "remote", sc->remote);
	if (rc == 0)
		rc = vx_buf_addc(b, '}');
	return rc ? rc : decl_hash(b, &st->d);
}

static int hash_job(struct vx_buf *b, struct stack_job *j)
{
	int rc = vx_buf_adds(b, "{\"address\":");

	if (rc == 0)
		rc = vx_buf_add_json_str(b, j->d.address);
	if (rc == 0)
		rc = json_kv(b, "displayName", j->display_name);
	if (rc == 0)
		rc = json_map(b, "labels", &j->labels);
	if (rc == 0)
		rc = vx_buf_printf(b, ",\"maxAttempts\":\"%lld\"", (long long)j->max_attempts);
	if (rc == 0)
		rc = json_kv(b, "onChange", stack_on_change_name(j->on_change));
	if (rc == 0)
		rc = vx_buf_printf(b, ",\"protect\":%s", j->protect ? "true" : "false");
	if (rc == 0)
		rc = json_kv(b, "region", j->region);
	if (rc == 0)
		rc = vx_buf_adds(b, ",\"resubmitOn\":[");
	for (unsigned i = 0, first = 1; i < STACK_FAIL_NCLASSES && rc == 0; i++) {
		if (!(j->resubmit_on & (1u << i)))
			continue;
		rc = vx_buf_printf(b, "%s\"%s\"", first ? "" : ",", stack_fail_names[i]);
		first = 0;
	}
	if (rc == 0)
		rc = vx_buf_printf(b, "],\"run\":\"%lld\",\"spec\":", (long long)j->run);
	/* The redacted form: a changed secret changes its HMAC there too, and
	 * without the salt the hash is no oracle for a guessed secret. */
	if (rc == 0)
		rc = vx_buf_adds(b, j->spec.redacted_json ? j->spec.redacted_json
				 : j->spec.canonical_json ? j->spec.canonical_json : "null");
	return rc ? rc : decl_hash(b, &j->d);
}

static int hash_reservation(struct vx_buf *b, struct stack_reservation *r)
{
	int rc = vx_buf_adds(b, "{\"accelerators\":[");

	for (size_t i = 0; i < r->naccelerators && rc == 0; i++) {
		rc = vx_buf_printf(b, "%s{\"count\":\"%lld\",\"type\":", i ? "," : "",
				   (long long)r->accelerators[i].count);
		if (rc == 0)
			rc = vx_buf_add_json_str(b, r->accelerators[i].type);
		if (rc == 0)
			rc = vx_buf_addc(b, '}');
	}
	if (rc == 0)
		rc = vx_buf_adds(b, "],\"address\":");
	if (rc == 0)
		rc = vx_buf_add_json_str(b, r->d.address);
	if (rc == 0)
		rc = vx_buf_printf(b, ",\"count\":\"%lld\"", (long long)r->count);
	if (rc == 0)
		rc = json_kv(b, "description", r->description);
	if (rc == 0)
		rc = json_kv(b, "machineType", r->machine_type);
	if (rc == 0)
		rc = vx_buf_printf(b, ",\"specificReservationRequired\":%s",
				   r->specific_required ? "true" : "false");
	if (rc == 0)
		rc = json_kv(b, "zone", r->zone);
	/* Added later: hashed only when set, so earlier declarations keep their hash. */
	if (rc == 0 && r->protect)
		rc = vx_buf_adds(b, ",\"protect\":true");
	return rc ? rc : decl_hash(b, &r->d);
}

static int hash_quota(struct vx_buf *b, struct stack_quota *q)
{
	int rc = vx_buf_adds(b, "{\"address\":");

	if (rc == 0)
		rc = vx_buf_add_json_str(b, q->d.address);
	if (rc == 0)
		rc = json_kv(b, "contactEmail", q->contact_email);
	if (rc == 0)
		rc = json_map(b, "dimensions", &q->dimensions);
	if (rc == 0)
		rc = json_kv(b, "justification", q->justification);
	if (rc == 0)
		rc = vx_buf_printf(b, ",\"preferredValue\":\"%lld\"", (long long)q->preferred_value);
	if (rc == 0)
		rc = json_kv(b, "quotaId", q->quota_id);
	if (rc == 0)
		rc = json_kv(b, "service", q->service);
	if (rc == 0 && q->ignore_safety_checks)
		rc = vx_buf_adds(b, ",\"ignoreSafetyChecks\":true");
	return rc ? rc : decl_hash(b, &q->d);
}

static int decl_ptr_cmp(const void *a, const void *b)
{
	const struct stack_decl *x = *(const struct stack_decl *const *)a;
	const struct stack_decl *y = *(const struct stack_decl *const *)b;

	return strcmp(x->address, y->address);
}

/* Every declaration's hash, then the stack's over "address hash\n" lines sorted by address. */
static int hash_all(struct stack *st)
{
	size_t n = 1 + st->njobs + st->nreservations + st->nquotas, k = 0;
	const struct stack_decl **all = calloc(n, sizeof(*all));
	struct vx_buf b = VX_BUF_INIT;
	int rc = all ? 0 : VX_ENOMEM;

	if (rc == 0)
		rc = hash_stack_decl(&b, st);
	for (size_t i = 0; i < st->nreservations && rc == 0; i++)
		rc = hash_reservation(&b, &st->reservations[i]);
	for (size_t i = 0; i < st->nquotas && rc == 0; i++)
		rc = hash_quota(&b, &st->quotas[i]);
	for (size_t i = 0; i < st->njobs && rc == 0; i++)
		rc = hash_job(&b, &st->jobs[i]);
	if (rc)
		goto done;
	all[k++] = &st->d;
	for (size_t i = 0; i < st->nreservations; i++)
		all[k++] = &st->reservations[i].d;
	for (size_t i = 0; i < st->nquotas; i++)
		all[k++] = &st->quotas[i].d;
	for (size_t i = 0; i < st->njobs; i++)
		all[k++] = &st->jobs[i].d;
	qsort(all, n, sizeof(*all), decl_ptr_cmp);
	rc = vx_buf_adds(&b, "vx-stack-decl-v1\n");
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = vx_buf_printf(&b, "%s %s\n", all[i]->address, all[i]->hash);
	if (rc == 0)
		rc = vx_digest_sha256_hex(st->decl_hash, b.data, b.len);
done:
	free(all);
	vx_buf_release(&b);
	return rc;
}

int stack_apply_salt(struct stack *st, const char *salt, struct vx_err *err)
{
	size_t nsalted = 0;
	int rc;

	for (size_t i = 0; i < st->njobs; i++) {
		if (!st->jobs[i].spec.nsensitive)
			continue;
		rc = job_spec_rehash(&st->jobs[i].spec, salt, err);
		if (rc < 0)
			return vx_err_wrap(err, "%s", st->jobs[i].d.address);
		nsalted++;
	}
	/* The declaration hashes take the jobs' redacted specs: they change too. */
	if (nsalted && (rc = hash_all(st)) < 0)
		return vx_err_set(err, rc, "hashing the declarations failed");
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Documents and files */

/* Classifies one document (reporting what is wrong with its shape or kind). */
static int doc_kind(struct loader *L, const struct ynode *root)
{
	const struct ynode *k;
	struct vx_buf b = VX_BUF_INIT;

	L->prefix[0] = '\0';
	if (root->kind != YNODE_MAP) {
		const char *t = type_of(root);

		lerr(L, root, "a document must be a mapping with a \"kind\", got %s %s", article(t),
		     t);
		return -1;
	}
	k = field(root, "kind");
	if (!k) {
		lerr(L, root, "document has no \"kind\" (one of %s)",
		     join_words(&b, kind_names, ARRAY_SIZE(kind_names)));
		vx_buf_release(&b);
		return -1;
	}
	if (!is_string(k)) {
		wrong_type(L, k, "kind", "string");
		return -1;
	}
	for (int i = 0; i < KIND_COUNT; i++)
		if (!strcmp(k->str, kind_names[i]))
			return i;
	unknown_word(L, k, "kind", "value", kind_names, ARRAY_SIZE(kind_names));
	return -1;
}

struct files {
	struct yfile **f;
	size_t n;
	struct doc *docs;
	size_t ndocs, adocs;
};

static int add_file_docs(struct loader *L, struct files *fs, struct yfile *yf)
{
	size_t nonempty = 0;

	fs->f[fs->n++] = yf;
	for (size_t i = 0; i < yf->ndocs; i++) {
		int kind;

		if (!yf->docs[i])
			continue;
		nonempty++;
		kind = doc_kind(L, yf->docs[i]);
		if (kind < 0)
			continue;
		if (fs->ndocs == fs->adocs) {
			size_t na = fs->adocs ? fs->adocs * 2 : 16;
			struct doc *p = realloc(fs->docs, na * sizeof(*p));

			if (!p) {
				oom(L);
				return VX_ENOMEM;
			}
			fs->docs = p;
			fs->adocs = na;
		}
		fs->docs[fs->ndocs].root = yf->docs[i];
		fs->docs[fs->ndocs].kind = kind;
		fs->ndocs++;
	}
	if (nonempty == 0) {
		L->prefix[0] = '\0';
		L->nerr++;
		if (vx_diags_add(L->diags, yf->path, 1, 1, "empty file: no YAML document in it") < 0)
			oom(L);
	}
	return 0;
}

void stack_free(struct stack *st)
{
	if (!st)
		return;
	decl_release(&st->d);
	free(st->dir);
	free(st->name);
	free(st->project);
	free(st->region);
	free(st->state.path);
	free(st->state.remote);
	free(st->state.branch);
	free(st->state.bucket);
	labels_release(&st->labels);
	for (size_t i = 0; i < st->njobs; i++)
		job_release(&st->jobs[i]);
	free(st->jobs);
	for (size_t i = 0; i < st->nreservations; i++)
		reservation_release(&st->reservations[i]);
	free(st->reservations);
	for (size_t i = 0; i < st->nquotas; i++)
		quota_release(&st->quotas[i]);
	free(st->quotas);
	free(st);
}

/* The passes over the classified documents. */
static int build(struct loader *L, struct stack *st, const struct files *fs)
{
	size_t count[KIND_COUNT] = { 0 }, nseen = 0;
	const struct ynode *first_stack = NULL;
	struct spec_reservation *sres = NULL;
	struct seen *seen = NULL;
	struct spec_env env;
	size_t nsres = 0;

	for (size_t i = 0; i < fs->ndocs; i++)
		count[fs->docs[i].kind]++;
	seen = seen_new(fs->ndocs);
	st->jobs = calloc(count[KIND_JOB] + 1, sizeof(*st->jobs));
	st->reservations = calloc(count[KIND_RESERVATION] + 1, sizeof(*st->reservations));
	st->quotas = calloc(count[KIND_QUOTA] + 1, sizeof(*st->quotas));
	sres = calloc(count[KIND_RESERVATION] + 1, sizeof(*sres));
	if (!seen || !st->jobs || !st->reservations || !st->quotas || !sres) {
		oom(L);
		goto done;
	}

	/* the Stack: exactly one */
	for (size_t i = 0; i < fs->ndocs && !L->rc; i++) {
		const struct ynode *doc = fs->docs[i].root;

		if (fs->docs[i].kind != KIND_STACK)
			continue;
		if (first_stack) {
			L->prefix[0] = '\0';
			lerr(L, doc, "a second Stack: this directory's Stack is declared at "
			     "%s:%u:%u (one Stack per directory)", first_stack->file,
			     first_stack->line, first_stack->col);
			continue;
		}
		first_stack = doc;
		read_stack(L, st, doc);
	}
	if (!first_stack && !L->unparsed) {
		L->prefix[0] = '\0';
		lerr_at(L, st->dir, NULL, "no Stack: one document must be \"kind: Stack\" (with name, "
			"project and region)");
	}

	/* reservations, then quotas (with their own name spaces) */
	for (size_t i = 0; i < fs->ndocs && !L->rc; i++) {
		struct stack_reservation *r;

		if (fs->docs[i].kind != KIND_RESERVATION)
			continue;
		r = &st->reservations[st->nreservations++];
		if (read_reservation(L, r, fs->docs[i].root, seen, &nseen) < 0)
			goto done;
		if (r->d.name && r->zone && r->machine_type) {
			sres[nsres].name = r->d.name;
			sres[nsres].zone = r->zone;
			sres[nsres].machine_type = r->machine_type;
			if (r->naccelerators) {
				sres[nsres].accelerator = r->accelerators[0].type;
				sres[nsres].accelerator_count = r->accelerators[0].count;
			}
			nsres++;
		}
	}
	nseen = 0;
	for (size_t i = 0; i < fs->ndocs && !L->rc; i++) {
		struct stack_quota *q;

		if (fs->docs[i].kind != KIND_QUOTA)
			continue;
		q = &st->quotas[st->nquotas++];
		if (read_quota(L, q, fs->docs[i].root, seen, &nseen) < 0)
			goto done;
		for (size_t k = 0; q->service && q->quota_id && k + 1 < st->nquotas; k++) {
			const struct stack_quota *o = &st->quotas[k];

			if (o->service && o->quota_id && !strcmp(o->service, q->service) &&
			    !strcmp(o->quota_id, q->quota_id) && dims_equal(&o->dimensions, &q->dimensions))
				lerr(L, fs->docs[i].root, "the same quota and dimensions as "
				     "QuotaPreference \"%s\" at %s:%u:%u (Cloud Quotas keeps one "
				     "preference per quota and dimensions)", o->d.name ? o->d.name : "",
				     o->d.file ? o->d.file : "", o->d.line, o->d.col);
		}
	}

	/* jobs, with the reservations for reservationAffinity by name */
	env.project = st->project;
	env.region = st->region;
	env.reservations = sres;
	env.nreservations = nsres;
	nseen = 0;
	for (size_t i = 0; i < fs->ndocs && !L->rc; i++) {
		if (fs->docs[i].kind != KIND_JOB)
			continue;
		if (read_job(L, &st->jobs[st->njobs++], fs->docs[i].root, st, &env, seen, &nseen) < 0)
			goto done;
	}
done:
	seen_free(seen);
	free(sres);
	return L->rc;
}

/*
 * Moves every diagnostic of from, sorted by position, into to (which keeps
 * its own cap): the ones kept are the first in file order, not the first
 * found by the passes.
 */
static int move_diags(struct vx_diags *to, struct vx_diags *from)
{
	vx_diags_sort(from);
	for (size_t i = 0; i < from->n; i++)
		if (vx_diags_add(to, from->items[i].file, from->items[i].line, from->items[i].col,
				 "%s", from->items[i].msg) < 0)
			return VX_ENOMEM;
	to->dropped += from->dropped;
	vx_diags_release(from);
	vx_diags_sort(to);
	return 0;
}

static int load(struct stack **out, const char *dir, const char *const *paths,
		const struct stack_source *srcs, size_t n, const struct ynode_limits *limits,
		struct vx_diags *caller_diags, struct vx_err *err)
{
	struct vx_diags all = { NULL, 0, 0, 10000, 0 }, *diags = &all;
	struct loader L = { diags, err, 0, 0, 0, 0, "" };
	struct files fs = { NULL, 0, NULL, 0, 0 };
	struct stack *st = NULL;
	char *path = NULL;
	int rc = 0;

	*out = NULL;
	fs.f = calloc(n + 1, sizeof(*fs.f));
	st = calloc(1, sizeof(*st));
	if (!fs.f || !st || !(st->dir = strdup(dir))) {
		rc = vx_err_set(err, VX_ENOMEM, "loading %s: out of memory", dir);
		goto done;
	}
	if (n == 0) {
		L.nerr++;
		if (vx_diags_add(diags, dir, 0, 0, "no *.yaml or *.yml files: a stack is a "
				 "directory of YAML files with one \"kind: Stack\"") < 0)
			rc = vx_err_set(err, VX_ENOMEM, "loading %s: out of memory", dir);
		goto done;
	}
	for (size_t i = 0; i < n; i++) {
		struct yfile *yf = NULL;

		if (paths) {
			rc = ynode_load_file(&yf, paths[i], limits, diags, err);
		} else {
			free(path);
			path = strcmp(dir, ".") ? vx_asprintf("%s%s%s", dir,
				dir[strlen(dir) - 1] == '/' ? "" : "/", srcs[i].name)
				: vx_strdup(srcs[i].name);
			if (!path) {
				rc = vx_err_set(err, VX_ENOMEM, "loading %s: out of memory", dir);
				goto done;
			}
			rc = ynode_load_mem(&yf, path, srcs[i].data, srcs[i].len, limits, diags, err);
		}
		if (rc == VX_EINVAL) {
			/* the file's own problem, already in diags */
			L.nerr++;
			L.unparsed = 1;
			continue;
		}
		if (rc < 0)
			goto done;
		if (add_file_docs(&L, &fs, yf) < 0 || L.rc) {
			rc = L.rc;
			goto done;
		}
	}
	rc = build(&L, st, &fs);
	if (rc < 0)
		goto done;
	if (L.nerr > 0 || vx_diags_count(diags) > 0) {
		rc = VX_EINVAL;
		goto done;
	}
	rc = hash_all(st);
	if (rc < 0) {
		rc = vx_err_set(err, rc, "loading %s: hashing the declarations failed", dir);
		goto done;
	}
	*out = st;
	st = NULL;
done:
	if (rc == VX_EINVAL || (rc == 0 && L.nerr))
		rc = VX_EINVAL;
	if (move_diags(caller_diags, &all) < 0 && rc != VX_ENOMEM)
		rc = vx_err_set(err, VX_ENOMEM, "loading %s: out of memory", dir);
	vx_diags_release(&all);
	stack_free(st);
	for (size_t i = 0; i < fs.n; i++)
		yfile_free(fs.f[i]);
	free(fs.f);
	free(fs.docs);
	free(path);
	return rc;
}

int stack_load_mem(struct stack **out, const char *dir, const struct stack_source *files,
		   size_t nfiles, const struct ynode_limits *limits, struct vx_diags *diags,
		   struct vx_err *err)
{
	return load(out, dir, NULL, files, nfiles, limits, diags, err);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int is_yaml_name(const char *s)
{
	size_t n = strlen(s);

	if (s[0] == '.')
		return 0;
	return (n > 5 && !strcmp(s + n - 5, ".yaml")) || (n > 4 && !strcmp(s + n - 4, ".yml"));
}

int stack_load(struct stack **out, const char *dir, const struct ynode_limits *limits,
	       struct vx_diags *diags, struct vx_err *err)
{
	DIR *d = NULL;
	struct dirent *de;
	char **paths = NULL;
	size_t n = 0, alloc = 0;
	int rc = 0;

	*out = NULL;
	d = opendir(dir);
	if (!d) {
		rc = vx_err_set(err, errno == ENOENT ? VX_ENOTFOUND : VX_EIO, "reading %s: %s", dir,
				strerror(errno));
		goto done;
	}
	while ((errno = 0, de = readdir(d)) != NULL) {
		struct stat sb;
		char *p;

		if (!is_yaml_name(de->d_name))
			continue;
		p = strcmp(dir, ".") ? vx_asprintf("%s%s%s", dir,
			dir[strlen(dir) - 1] == '/' ? "" : "/", de->d_name) : vx_strdup(de->d_name);
		if (!p) {
			rc = vx_err_set(err, VX_ENOMEM, "reading %s: out of memory", dir);
			goto done;
		}
		if (stat(p, &sb) < 0 || !S_ISREG(sb.st_mode)) {
			free(p);
			continue;
		}
		if (n == alloc) {
			size_t na = alloc ? alloc * 2 : 16;
			char **np = realloc(paths, na * sizeof(*np));

			if (!np) {
				free(p);
				rc = vx_err_set(err, VX_ENOMEM, "reading %s: out of memory", dir);
				goto done;
			}
			paths = np;
			alloc = na;
		}
		paths[n++] = p;
	}
	if (errno) {
		rc = vx_err_set(err, VX_EIO, "reading %s: %s", dir, strerror(errno));
		goto done;
	}
	if (n > 1)
		qsort(paths, n, sizeof(*paths), name_cmp);
	rc = load(out, dir, (const char *const *)paths, NULL, n, limits, diags, err);
done:
	if (d)
		closedir(d);
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Lookups */

const struct stack_job *stack_find_job(const struct stack *st, const char *name)
{
	for (size_t i = 0; i < st->njobs; i++)
		if (!strcmp(st->jobs[i].d.name, name))
			return &st->jobs[i];
	return NULL;
}

const struct stack_reservation *stack_find_reservation(const struct stack *st, const char *name)
{
	for (size_t i = 0; i < st->nreservations; i++)
		if (!strcmp(st->reservations[i].d.name, name))
			return &st->reservations[i];
	return NULL;
}

const struct stack_quota *stack_find_quota(const struct stack *st, const char *name)
{
	for (size_t i = 0; i < st->nquotas; i++)
		if (!strcmp(st->quotas[i].d.name, name))
			return &st->quotas[i];
	return NULL;
}

const struct stack_decl *stack_find_decl(const struct stack *st, const char *address)
{
	const char *dot = strchr(address, '.');
	const char *name = dot ? dot + 1 : "";
	size_t plen = dot ? (size_t)(dot - address) : 0;

	if (plen == 3 && !strncmp(address, "job", 3)) {
		const struct stack_job *j = stack_find_job(st, name);

		return j ? &j->d : NULL;
	}
	if (plen == 11 && !strncmp(address, "reservation", 11)) {
		const struct stack_reservation *r = stack_find_reservation(st, name);

		return r ? &r->d : NULL;
	}
	if (plen == 5 && !strncmp(address, "quota", 5)) {
		const struct stack_quota *q = stack_find_quota(st, name);

		return q ? &q->d : NULL;
	}
	if (plen == 5 && !strncmp(address, "stack", 5) && st->d.name && !strcmp(st->d.name, name))
		return &st->d;
	return NULL;
}
