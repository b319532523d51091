/*
 * The stack loader: a directory of YAML files -> struct stack, with every
 * problem reported as "FILE:LINE:COLUMN: KIND \"NAME\": field: message".
 *
 * It works in passes over the parsed documents: sort them by kind, read the
 * Stack (its region and labels are defaults for the rest), then each kind of
 * kind_table in its order, the order of apply's phases (a kind whose
 * declarations a later one names comes first: the jobs' specs are checked by
 * spec_check() against the reservations declared). Problems never stop the passes, so one run reports
 * all of them; only allocation failures and unreadable files end it early.
 * The hashes are computed only for a stack that is valid.
 *
 * This file holds the context, its error reporting, names and duplicates,
 * labels, the passes, the hashes and the lookups; the name rules are in
 * stack_names.c, the typed getters in stack_get.c, the Stack document's
 * reader in stack_kinds.c and each kind's reader in its kind files (what
 * they share: stack_loader.h). It names no kind but to peek for jobs.
 */
#include "reconcile/stack.h"
#include "reconcile/stack_loader.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reconcile/kind.h"
#include "reconcile/kind_job.h"
#include "reconcile/load/spec.h"
#include "reconcile/load/ynode.h"
#include "reconcile/policy_rules.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/text.h"
#include "util/diag.h"
#include "util/digest.h"
#include "util/suggest.h"
#include "util/banned.h"

/* clang-format would put one name a line. */
/* clang-format off */
const char *const stack_fail_names[STACK_FAIL_NCLASSES] = {
	"stockout", "preempted", "wait-timeout", "quota", "user-error", "internal",
	"cancelled-outside", "config", "unknown", "refused", "timeout", "queue-timeout",
};
/* clang-format on */

const char *const stack_on_change_names[3] = { "replace", "after-finish", "ignore" };
const char *const stack_backend_names[3] = { "git", "file", "gcs" };
/*
 * The Stack document: read by the loader as a kind, but not one of
 * kind_table's (nothing of it is refreshed, planned or applied).
 */
const struct kind stack_doc_kind = { .name = "Stack", .prefix = "stack" };

/*
 * The kinds a document may have, as the messages list them: the Stack, then
 * kind_table's in reverse phase order (jobs first, as the docs list them).
 * and the Policy last. Returns how many were written to names (cap KIND_MAX + 2).
 */
static size_t doc_kind_names(const char *names[KIND_MAX + 2])
{
	size_t n = 0;

	names[n++] = stack_doc_kind.name;
	for (size_t k = kind_count; k-- > 0;)
		names[n++] = kind_table[k]->name;
	names[n++] = policy_doc_kind.name;
	return n;
}

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
	return stack_on_change_names[v - 1];
}

const char *stack_backend_name(enum stack_backend b)
{
	if (b < STACK_BACKEND_GIT || b > STACK_BACKEND_GCS)
		return NULL;
	return stack_backend_names[b - 1];
}

/* ---------------------------------------------------------------------- */
/* The loader's context and error reporting */

static void set_prefix(struct loader *L, const struct kind *kind, const char *name)
{
	if (name)
		snprintf(L->prefix, sizeof(L->prefix), "%s \"%.100s\": ", kind->name, name);
	else
		snprintf(L->prefix, sizeof(L->prefix), "%s: ", kind->name);
}

void stack_oom(struct loader *L)
{
	if (!L->rc)
		L->rc = vx_err_set(L->err, VX_ENOMEM, "loading the stack: out of memory");
}

/* Adds "<prefix><message>" at node at's position (or the file alone when at is NULL). */
void stack_err_at(struct loader *L, const char *file, const struct ynode *at, const char *fmt, ...)
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
		stack_oom(L);
	vx_buf_release(&b);
}

void stack_violation(struct loader *L, const char *file, unsigned line, unsigned col, const char *fmt, ...)
{
	struct vx_buf b = VX_BUF_INIT;
	va_list ap;
	int rc;

	/* "<prefix><message>", as stack_err_at words it, then the loader's errors or the violations. */
	va_start(ap, fmt);
	rc = vx_buf_adds(&b, L->prefix);
	if (rc == 0)
		rc = vx_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	if (rc == 0 && !L->violations) {
		L->nerr++;
		rc = vx_diags_add(L->diags, file, line, col, "%s", vx_buf_str(&b));
	} else if (rc == 0) {
		rc = policy_rules_add_violation(L->violations, file, line, col, L->about, vx_buf_str(&b));
		if (rc == 0)
			L->violations->violations[L->violations->nviolations - 1].rung = L->about_rung;
	}
	if (rc < 0)
		stack_oom(L);
	vx_buf_release(&b);
}

void stack_warn(struct loader *L, const struct ynode *at, const char *fmt, ...)
{
	struct vx_buf b = VX_BUF_INIT;
	va_list ap;
	int rc;

	if (!L->warnings)
		return;
	va_start(ap, fmt);
	rc = vx_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	if (rc < 0 || vx_diags_add(L->warnings, at ? at->file : NULL, at ? at->line : 0,
				   at ? at->col : 0, "%s%s", L->prefix, vx_buf_str(&b)) < 0)
		stack_oom(L);
	vx_buf_release(&b);
}

/* Formats ", " separated candidates into b (for "one of a, b, c"). */
static const char *join_words(struct vx_buf *b, const char *const *words, size_t n)
{
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0; i++)
		rc = vx_buf_printf(b, "%s%s", i ? ", " : "", words[i]);
	return vx_buf_str(b);
}

/* "unknown value "x" (did you mean "y"?)" or "unknown value "x" (one of a, b)". */
void stack_unknown_word(struct loader *L, const struct ynode *at, const char *path,
			 const char *what, const char *const *words, size_t n)
{
	const char *s = vx_suggest(at->str, words, n);
	struct vx_buf b = VX_BUF_INIT;

	if (s)
		stack_err(L, at, "%s%sunknown %s \"%s\" (did you mean \"%s\"?)", path, *path ? ": " : "",
		     what, at->str, s);
	else
		stack_err(L, at, "%s%sunknown %s \"%s\" (one of %s)", path, *path ? ": " : "", what,
		     at->str, join_words(&b, words, n));
	vx_buf_release(&b);
}

/* Reports every key of map not in keys. path is "" at the top of a document. */
void stack_check_keys(struct loader *L, const struct ynode *map, const char *path,
		       const char *const *keys, size_t n)
{
	for (size_t i = 0; i < map->n; i++) {
		const struct ynode *k = map->pairs[i].key;
		size_t j;

		/* The first byte rules most keys out without a call to strcmp. */
		for (j = 0; j < n; j++)
			if (k->str[0] == keys[j][0] && !strcmp(k->str, keys[j]))
				break;
		if (j == n)
			stack_unknown_word(L, k, path, "field", keys, n);
	}
}

const char *stack_type_of(const struct ynode *n)
{
	const char *t = ynode_type_name(n);

	return t ? t : "value";
}

static const char *article(const char *t)
{
	return strchr("aeiou", t[0]) ? "an" : "a";
}

void stack_wrong_type(struct loader *L, const struct ynode *at, const char *path,
		       const char *want)
{
	const char *got = stack_type_of(at);
	struct ynode_why why;

	/* One wording for every string field, here and in the spec. */
	if (!strcmp(want, "string") && ynode_want_string(&why, at) < 0)
		stack_err(L, at, "%s: %s", path, why.s);
	else
		stack_err(L, at, "%s: expected %s %s, got %s %s", path, article(want), want,
		     article(got), got);
}

int stack_is_string(const struct ynode *n)
{
	return n->kind == YNODE_SCALAR && !strcmp(stack_type_of(n), "string");
}

/* ---------------------------------------------------------------------- */
/* Labels and string maps */

const char *stack_labels_get(const struct stack_labels *l, const char *key)
{
	struct vx_label k = { (char *)(uintptr_t)key, NULL }, *hit;

	if (!l->n)
		return NULL;
	hit = bsearch(&k, l->items, l->n, sizeof(*l->items), vx_label_cmp);
	return hit ? hit->value : NULL;
}

void stack_labels_release(struct stack_labels *l)
{
	vx_labels_free(l->items, l->n);
	l->items = NULL;
	l->n = 0;
}

/* Sets key to value (copies), replacing an existing entry; keeps the order sorted. */
int stack_labels_set(struct stack_labels *l, const char *key, const char *value)
{
	return vx_labels_set(&l->items, &l->n, key, value);
}

/* ---------------------------------------------------------------------- */
/* Names and duplicates */

/* Reads `name` with the rule of its kind; sets the message prefix. */
const char *stack_read_name(struct loader *L, const struct ynode *doc, const struct kind *kind)
{
	const struct ynode *v;
	const char *name;
	int ok;

	set_prefix(L, kind, NULL);
	if (!stack_get_str(&name, &v, L, doc, "", "name", 1))
		return NULL;
	set_prefix(L, kind, name);
	if (!kind->rfc1035_names) {
		ok = stack_name_valid(name);
		if (!ok)
			stack_err(L, v, "name: \"%s\" is not a valid name: use lowercase letters, digits, "
			     "\"-\" and \"_\", starting with a letter, at most 63 characters", name);
	} else {
		ok = stack_names_rfc1035_valid(name);
		if (!ok)
			stack_err(L, v, "name: \"%s\" is not a valid name: use lowercase letters, digits "
			     "and \"-\", starting with a letter and not ending with \"-\", at most "
			     "63 characters", name);
	}
	return ok ? name : NULL;
}

/* 1 when name is new (recorded), 0 when a duplicate (reported) or out of memory (recorded). */
int stack_check_unique(struct loader *L, struct seen *seen, size_t *nseen, const char *name,
			const struct ynode *doc)
{
	const struct ynode *at = ynode_get(doc, "name");
	size_t prev;
	int rc;

	/* cppcheck-suppress ctunullpointer ; the one caller passing NULL (a sweep's run, via
	 * stack_kinds_read_job) passes seen NULL too, and then does not call this. */
	if (*nseen == 0) {
		vx_hashmap_clear(&seen->names);
		seen->n = 0;
	}
	if (VX_ALLOC_GROW(seen->at, seen->n + 1, seen->alloc) < 0) {
		stack_oom(L);
		return 0;
	}
	rc = vx_hashmap_add(&seen->names, name, strlen(name), seen->n, &prev);
	if (rc < 0) {
		stack_oom(L);
		return 0;
	}
	if (rc == 1) {
		stack_err(L, at, "name: duplicate: \"%s\" is already declared at %s:%u:%u", name,
		     seen->at[prev]->file, seen->at[prev]->line, seen->at[prev]->col);
		return 0;
	}
	seen->at[seen->n++] = at;
	(*nseen)++;
	return 1;
}

static struct seen *seen_new(void)
{
	return calloc(1, sizeof(struct seen));
}

static void seen_free(struct seen *t)
{
	if (t) {
		vx_hashmap_release(&t->names);
		free(t->at);
	}
	free(t);
}

int stack_decl_init(struct stack_decl *d, struct loader *L, const char *prefix, const char *name,
		    const struct ynode *doc)
{
	d->name = strdup(name);
	d->address = vx_asprintf("%s.%s", prefix, name);
	d->file = strdup(doc->file);
	d->line = doc->line;
	d->col = doc->col;
	if (!d->name || !d->address || !d->file) {
		stack_oom(L);
		return -1;
	}
	return 0;
}

void stack_decl_release(struct stack_decl *d)
{
	free(d->name);
	free(d->address);
	free(d->file);
}

/* strdup of an optional borrowed string, recording OOM. */
char *stack_dup_opt(struct loader *L, const char *s)
{
	char *r;

	if (!s)
		return NULL;
	r = strdup(s);
	if (!r)
		stack_oom(L);
	return r;
}

/* ---------------------------------------------------------------------- */
/* Canonical forms and hashes */

/* stack_loader.h */
/* ,"key": put together by hand (every field of every job's hash passes here, printf was slow). */
static int json_key(struct vx_buf *b, const char *key)
{
	int rc = vx_buf_add(b, ",\"", 2);

	if (rc == 0)
		rc = vx_buf_adds(b, key);
	return rc ? rc : vx_buf_add(b, "\":", 2);
}

int stack_json_kv(struct vx_buf *b, const char *key, const char *value)
{
	int rc = json_key(b, key);

	if (rc == 0)
		rc = value ? vx_buf_add_json_str(b, value) : vx_buf_adds(b, "null");
	return rc;
}

int stack_json_map(struct vx_buf *b, const char *key, const struct stack_labels *l)
{
	int rc = json_key(b, key);

	if (rc == 0)
		rc = vx_buf_addc(b, '{');

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

/* stack_loader.h */
int stack_decl_hash(struct vx_buf *b, struct stack_decl *d)
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
	/* budget, failOn and prices only when set, so stacks without them keep their hash. */
	if (rc == 0)
		rc = stack_budget_canonical(b, st);
	if (rc == 0 && (st->fail_on_quota || st->fail_on_budget))
		rc = vx_buf_printf(b, ",\"failOn\":[%s%s%s]", st->fail_on_quota ? "\"quota\"" : "",
				   st->fail_on_quota && st->fail_on_budget ? "," : "",
				   st->fail_on_budget ? "\"budget\"" : "");
	if (rc == 0)
		rc = stack_json_map(b, "labels", &st->labels);
	/* notify only when set, as failOn. */
	if (rc == 0)
		rc = stack_notify_canonical(b, st);
	if (rc == 0 && st->prices)
		rc = stack_json_kv(b, "prices", st->prices);
	if (rc == 0)
		rc = stack_json_kv(b, "project", st->project);
	if (rc == 0)
		rc = stack_json_kv(b, "region", st->region);
	if (rc == 0)
		rc = vx_buf_adds(b, ",\"state\":{\"backend\":");
	if (rc == 0)
		rc = vx_buf_add_json_str(b, stack_backend_name(sc->backend));
	if (rc == 0)
		rc = stack_json_kv(b, "branch", sc->branch);
	if (rc == 0)
		rc = stack_json_kv(b, "bucket", sc->bucket);
	if (rc == 0)
		rc = stack_json_kv(b, "path", sc->path);
	if (rc == 0)
		rc = stack_json_kv(b, "remote", sc->remote);
	if (rc == 0)
		rc = vx_buf_addc(b, '}');
	return rc ? rc : stack_decl_hash(b, &st->d);
}

static int decl_ptr_cmp(const void *a, const void *b)
{
	const struct stack_decl *x = *(const struct stack_decl *const *)a;
	const struct stack_decl *y = *(const struct stack_decl *const *)b;

	return strcmp(x->address, y->address);
}

/* The declarations of every kind, the Stack's first, into all (room for every one). */
static size_t all_decls(const struct stack_decl **all, const struct stack *st)
{
	size_t k = 0;

	all[k++] = &st->d;
	for (size_t i = 0; i < kind_count; i++)
		for (size_t d = 0; d < kind_count_decls(kind_table[i], st); d++)
			all[k++] = kind_decl_at(kind_table[i], st, d);
	return k;
}

/* Every declaration's hash, then the stack's over "address hash\n" lines sorted by address. */
static int hash_all(struct stack *st)
{
	size_t n = 1, k;
	const struct stack_decl **all;
	struct vx_buf b = VX_BUF_INIT;
	int rc;

	for (size_t i = 0; i < kind_count; i++)
		n += kind_count_decls(kind_table[i], st);
	all = calloc(n, sizeof(*all));
	rc = all ? hash_stack_decl(&b, st) : VX_ENOMEM;
	for (size_t i = 0; i < kind_count && rc == 0; i++)
		rc = kind_table[i]->decl_hash(st);
	if (rc)
		goto done;
	k = all_decls(all, st);
	qsort(all, k, sizeof(*all), decl_ptr_cmp);
	rc = vx_buf_adds(&b, "vx-stack-decl-v1\n");
	for (size_t i = 0; i < k && rc == 0; i++)
		if ((rc = vx_buf_adds(&b, all[i]->address)) == 0 && (rc = vx_buf_addc(&b, ' ')) == 0 &&
		    (rc = vx_buf_adds(&b, all[i]->hash)) == 0)
			rc = vx_buf_addc(&b, '\n');
	/* The Policy documents only when there are some, so other stacks keep their hash. */
	if (rc == 0)
		rc = policy_rules_hash_line(&b, st->policy);
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

	for (size_t i = 0; i < kind_count; i++)
		if (kind_table[i]->decl_salt && (rc = kind_table[i]->decl_salt(st, salt, &nsalted, err)) < 0)
			return rc;
	/* The declaration hashes take the redacted specs: they change too. */
	if (nsalted && (rc = hash_all(st)) < 0)
		return vx_err_set(err, rc, "hashing the declarations failed");
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Documents and files */

/* Classifies one document (reporting what is wrong with its shape or kind): NULL when wrong. */
static const struct kind *doc_kind(struct loader *L, const struct ynode *root)
{
	const struct ynode *k;
	const struct kind *kind;
	struct vx_buf b = VX_BUF_INIT;
	const char *names[KIND_MAX + 2];
	size_t nnames = doc_kind_names(names);

	L->prefix[0] = '\0';
	if (root->kind != YNODE_MAP) {
		const char *t = stack_type_of(root);

		stack_err(L, root, "a document must be a mapping with a \"kind\", got %s %s", article(t),
		     t);
		return NULL;
	}
	k = stack_get_value(root, "kind");
	if (!k) {
		stack_err(L, root, "document has no \"kind\" (one of %s)", join_words(&b, names, nnames));
		vx_buf_release(&b);
		return NULL;
	}
	if (!stack_is_string(k)) {
		stack_wrong_type(L, k, "kind", "string");
		return NULL;
	}
	if (!strcmp(k->str, stack_doc_kind.name))
		return &stack_doc_kind;
	if (!strcmp(k->str, policy_doc_kind.name))
		return &policy_doc_kind;
	if ((kind = kind_by_name(k->str)))
		return kind;
	stack_unknown_word(L, k, "kind", "value", names, nnames);
	return NULL;
}

struct doc {
	struct ynode *root;
	const struct kind *kind;
};

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
		const struct kind *kind;

		if (!yf->docs[i])
			continue;
		nonempty++;
		kind = doc_kind(L, yf->docs[i]);
		if (!kind)
			continue;
		if (VX_ALLOC_GROW(fs->docs, fs->ndocs + 1, fs->adocs) < 0) {
			stack_oom(L);
			return VX_ENOMEM;
		}
		fs->docs[fs->ndocs].root = yf->docs[i];
		fs->docs[fs->ndocs].kind = kind;
		fs->ndocs++;
	}
	if (nonempty == 0) {
		L->prefix[0] = '\0';
		L->nerr++;
		if (vx_diags_add(L->diags, yf->path, 1, 1, "empty file: no YAML document in it") < 0)
			stack_oom(L);
	}
	return 0;
}

void stack_free(struct stack *st)
{
	if (!st)
		return;
	stack_decl_release(&st->d);
	free(st->dir);
	free(st->name);
	free(st->project);
	free(st->region);
	free(st->prices);
	stack_notify_release(st);
	free(st->state.path);
	free(st->state.remote);
	free(st->state.branch);
	free(st->state.bucket);
	vx_diags_release(&st->warnings);
	stack_labels_release(&st->labels);
	policy_rules_free(st->policy);
	for (size_t i = 0; i < kind_count; i++)
		if (kind_table[i]->decl_release)
			kind_table[i]->decl_release(&st->of[i]);
	free(st);
}

/* How many of fs's documents are of kind. */
static size_t count_docs(const struct files *fs, const struct kind *kind)
{
	size_t n = 0;

	for (size_t i = 0; i < fs->ndocs; i++)
		n += fs->docs[i].kind == kind;
	return n;
}

/* ---------------------------------------------------------------------- */
/* The passes over the classified documents */

/*
 * One kind of document: the kind it is (doc_kind), where its declarations go
 * (alloc makes room for n in struct stack), how one document is read, and
 * what is checked once all are read: the Stack's below, each kind's its
 * row's load_* slots (struct kind says what they do).
 */
struct doc_pass {
	const struct kind *kind;
	int (*alloc)(struct load_pass *B, size_t n);
	int (*prepare)(struct load_pass *B);
	int (*read)(struct load_pass *B, const struct ynode *doc);
	void (*finish)(struct load_pass *B);
};

/* The Stack: exactly one. */
static int read_stack_doc(struct load_pass *B, const struct ynode *doc)
{
	struct loader *L = B->L;

	if (B->first_stack) {
		L->prefix[0] = '\0';
		stack_err(L, doc, "a second Stack: this directory's Stack is declared at "
				  "%s:%u:%u (one Stack per directory)",
			  B->first_stack->file,
			  B->first_stack->line, B->first_stack->col);
		return 0;
	}
	B->first_stack = doc;
	stack_kinds_read_stack(B->st, L, doc);
	return 0;
}

/* No Stack at all, unless it may be in a file that did not parse. */
static void finish_stack_doc(struct load_pass *B)
{
	struct loader *L = B->L;

	if (!B->first_stack && !L->unparsed) {
		L->prefix[0] = '\0';
		stack_err_at(L, B->st->dir, NULL, "no Stack: one document must be \"kind: Stack\" (with name "
						  "and project)");
	}
}

/* The Policy pass starts with the repository's .vx/policy.yaml, read before the stack's own Policy. */
static int prepare_policy_doc(struct load_pass *B)
{
	return policy_rules_read_repo(B, B->policy_root);
}

/*
 * The passes in the order they run: the Stack (its region and labels are the
 * others' defaults), the Policy (what every declaration is checked against as
 * it is read), then kind_table's kinds in its order. Returns how many (at most KIND_MAX + 2).
 */
static size_t doc_passes(struct doc_pass *out)
{
	size_t n = 0;

	out[n++] = (struct doc_pass){ .kind = &stack_doc_kind, .read = read_stack_doc, .finish = finish_stack_doc };
	out[n++] = (struct doc_pass){ .kind = &policy_doc_kind, .prepare = prepare_policy_doc, .read = policy_rules_load_read, .finish = policy_rules_load_finish };
	for (size_t i = 0; i < kind_count; i++) {
		const struct kind *k = kind_table[i];

		out[n++] = (struct doc_pass){ .kind = k, .alloc = k->load_alloc, .prepare = k->load_prepare, .read = k->load_read, .finish = k->load_finish };
	}
	return n;
}

/*
 * Collects fs's documents of pass p's kind into B->docs in file order (the
 * order to read them in until p's prepare says otherwise). -1 when out of memory.
 */
static int collect_docs(struct load_pass *B, const struct files *fs, const struct doc_pass *p)
{
	size_t n = count_docs(fs, p->kind);

	free(B->docs);
	free(B->order);
	B->ndocs = 0;
	B->docs = calloc(n + 1, sizeof(*B->docs));
	B->order = calloc(n + 1, sizeof(*B->order));
	if (!B->docs || !B->order)
		return -1;
	for (size_t i = 0; i < fs->ndocs; i++)
		if (fs->docs[i].kind == p->kind) {
			B->order[B->ndocs] = B->ndocs;
			B->docs[B->ndocs++] = fs->docs[i].root;
		}
	return 0;
}

/* One pass: the documents of p's kind, read in order; problems never stop it. */
static int run_pass(struct load_pass *B, const struct files *fs, const struct doc_pass *p)
{
	B->nseen = 0;
	if (collect_docs(B, fs, p) < 0) {
		stack_oom(B->L);
		return -1;
	}
	if (p->prepare && p->prepare(B) < 0)
		return -1;
	for (size_t o = 0; o < B->ndocs && !B->L->rc; o++)
		if (p->read(B, B->docs[B->order[o]]) < 0)
			return -1;
	if (p->finish)
		p->finish(B);
	return 0;
}

/*
 * The passes over the classified documents, one per row of doc_passes, then
 * the policy's refusals of whole kinds. policy_root: the repository whose
 * .vx/policy.yaml binds the stack, or NULL; policy_src: that file's text, or NULL.
 */
static int build(struct loader *L, struct stack *st, const struct files *fs, const char *policy_root,
		 const struct stack_source *policy_src)
{
	struct load_pass B = { .L = L, .st = st, .policy_root = policy_root, .policy_src = policy_src };
	struct doc_pass passes[KIND_MAX + 2];
	size_t n = doc_passes(passes), i;

	/* room in struct stack for every kind's declarations, before any is read */
	B.seen = seen_new();
	for (i = 0; i < n && B.seen; i++)
		if (passes[i].alloc && passes[i].alloc(&B, count_docs(fs, passes[i].kind)) < 0)
			break;
	if (!B.seen || i < n) {
		stack_oom(L);
		goto done;
	}
	for (i = 0; i < n; i++)
		if (run_pass(&B, fs, &passes[i]) < 0)
			goto done;
	policy_rules_check_kinds(L, st);
done:
	free(B.docs);
	free(B.order);
	seen_free(B.seen);
	free(B.sres);
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

/*
 * Parses the n files (paths, or srcs in dir) and sorts their documents by
 * kind into fs. A file that does not parse is its own problem, already in
 * diags: counted, and the others are still read. *path is the last in-memory
 * file's name (the caller frees it). 0, or a failure not the stack's fault.
 */
static int read_files(struct loader *L, struct files *fs, char **path, const char *dir,
		      const char *const *paths, const struct stack_source *srcs, size_t n,
		      const struct ynode_limits *limits)
{
	int rc;

	for (size_t i = 0; i < n; i++) {
		struct yfile *yf = NULL;

		if (paths) {
			rc = ynode_load_file(&yf, paths[i], limits, L->diags, L->err);
		} else {
			free(*path);
			/* Callers give paths or srcs, n long: srcs here (list_yaml returns paths whenever it
			 * found a file). NOLINTBEGIN(clang-analyzer-core.NullDereference) */
			*path = strcmp(dir, ".") ? vx_asprintf("%s%s%s", dir,
							       dir[strlen(dir) - 1] == '/' ? "" : "/", srcs[i].name)
						 : vx_strdup(srcs[i].name);
			/* NOLINTEND(clang-analyzer-core.NullDereference) */
			if (!*path)
				return vx_err_set(L->err, VX_ENOMEM, "loading %s: out of memory", dir);
			rc = ynode_load_mem(&yf, *path, srcs[i].data, srcs[i].len, limits, L->diags,
					    L->err);
		}
		if (rc == VX_EINVAL) {
			/* the file's own problem, already in diags */
			L->nerr++;
			L->unparsed = 1;
			continue;
		}
		if (rc < 0)
			return rc;
		if (add_file_docs(L, fs, yf) < 0 || L->rc)
			return L->rc;
	}
	return 0;
}

/*
 * What a valid stack gets once read: its warnings in order, the declaration
 * hashes, and what each kind indexes (its load_index: the jobs by name).
 */
static int finish_stack(struct stack *st, const char *dir, struct vx_err *err)
{
	int rc;

	vx_diags_sort(&st->warnings);
	rc = hash_all(st);
	if (rc < 0)
		return vx_err_set(err, rc, "loading %s: hashing the declarations failed", dir);
	for (size_t i = 0; i < kind_count; i++)
		if (kind_table[i]->load_index && kind_table[i]->load_index(st) < 0)
			return vx_err_set(err, VX_ENOMEM, "loading %s: out of memory", dir);
	return 0;
}

/*
 * The policy violations the passes found (held): with no other problem and a
 * lenient load, the stack keeps them (st->policy->violations); otherwise each
 * is one more error among the others, as a strict load always reports them.
 */
static int settle_violations(struct loader *L, struct stack *st, struct policy_rules *held, int lenient)
{
	int rc = 0;

	if (lenient && st->policy)
		st->policy->lenient = 1;
	if (!held->nviolations)
		return 0;
	if (lenient && !L->nerr && !vx_diags_count(L->diags) && st->policy) {
		st->policy->violations = held->violations;
		st->policy->nviolations = held->nviolations;
		held->violations = NULL;
		held->nviolations = 0;
		return 0;
	}
	for (size_t i = 0; i < held->nviolations && rc == 0; i++) {
		const struct policy_violation *v = &held->violations[i];

		L->nerr++;
		if (!v->repeat)
			rc = vx_diags_add(L->diags, v->file, v->line, v->col, "%s", v->msg);
	}
	return rc;
}

static int load(struct stack **out, const char *dir, const char *const *paths,
		const struct stack_source *srcs, size_t n, const struct ynode_limits *limits,
		const char *policy_root, const struct stack_source *policy_src, int lenient,
		struct vx_diags *caller_diags, struct vx_err *err)
{
	struct vx_diags all = { NULL, 0, 0, 10000, 0 }, *diags = &all;
	struct policy_rules held = { 0 };
	struct loader L = { diags, err, 0, 0, 0, 0, "", NULL, &held, NULL, 0 };
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
	L.warnings = &st->warnings;
	if (n == 0) {
		L.nerr++;
		if (vx_diags_add(diags, dir, 0, 0, "no *.yaml or *.yml files: a stack is a "
				 "directory of YAML files with one \"kind: Stack\"") < 0)
			rc = vx_err_set(err, VX_ENOMEM, "loading %s: out of memory", dir);
		goto done;
	}
	rc = read_files(&L, &fs, &path, dir, paths, srcs, n, limits);
	if (rc < 0)
		goto done;
	rc = build(&L, st, &fs, policy_root, policy_src);
	if (rc == 0 && settle_violations(&L, st, &held, lenient) < 0)
		rc = vx_err_set(err, VX_ENOMEM, "loading %s: out of memory", dir);
	if (rc < 0)
		goto done;
	if (L.nerr > 0 || vx_diags_count(diags) > 0) {
		rc = VX_EINVAL;
		goto done;
	}
	rc = finish_stack(st, dir, err);
	if (rc < 0)
		goto done;
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
	policy_rules_violations_release(&held);
	return rc;
}

int stack_load_mem(struct stack **out, const char *dir, const struct stack_source *files,
		   size_t nfiles, const struct ynode_limits *limits, struct vx_diags *diags,
		   struct vx_err *err)
{
	return load(out, dir, NULL, files, nfiles, limits, NULL, NULL, 0, diags, err);
}

int stack_load_mem_policy(struct stack **out, const char *dir, const struct stack_source *files, size_t nfiles,
			  const struct stack_source *repo_policy, const struct ynode_limits *limits,
			  struct vx_diags *diags, struct vx_err *err)
{
	return load(out, dir, NULL, files, nfiles, limits, NULL, repo_policy, 0, diags, err);
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

/* The directory's YAML files (regular files, not starting with "."), sorted by name. */
static int list_yaml(char ***out, size_t *nout, const char *dir, struct vx_err *err)
{
	DIR *d = NULL;
	struct dirent *de;
	char **paths = NULL;
	size_t n = 0, alloc = 0;
	int rc = 0;

	*out = NULL;
	*nout = 0;
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
		if (VX_ALLOC_GROW(paths, n + 1, alloc) < 0) {
			free(p);
			rc = vx_err_set(err, VX_ENOMEM, "reading %s: out of memory", dir);
			goto done;
		}
		paths[n++] = p;
	}
	if (errno) {
		rc = vx_err_set(err, VX_EIO, "reading %s: %s", dir, strerror(errno));
		goto done;
	}
	if (n > 1)
		qsort(paths, n, sizeof(*paths), name_cmp);
	*out = paths;
	*nout = n;
	paths = NULL;
	n = 0;
done:
	if (d)
		closedir(d);
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	return rc;
}

static void free_paths(char **paths, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
}

/*
 * dir as an absolute path, "." and ".." folded away by name (as the shell's cd
 * does), not by following links: the repository that holds the stack is the one
 * its path names, whatever its links point to. Caller frees.
 */
static char *logical_path(const char *dir)
{
	char cwd[PATH_MAX], *out;
	const char *p, *q;
	size_t len = 0;

	if (dir[0] == '/')
		cwd[0] = '\0';
	else if (!getcwd(cwd, sizeof(cwd)))
		return NULL;
	/* At most cwd, "/" and dir, and the NUL. */
	out = malloc(strlen(cwd) + strlen(dir) + 3);
	if (!out)
		return NULL;
	len = strlen(cwd);
	memcpy(out, cwd, len);
	for (p = dir; *p; p = q) {
		while (*p == '/')
			p++;
		for (q = p; *q && *q != '/'; q++)
			;
		if (q == p || (q - p == 1 && p[0] == '.'))
			continue;
		if (q - p == 2 && p[0] == '.' && p[1] == '.') {
			while (len > 0 && out[len - 1] != '/')
				len--;
			if (len > 0)
				len--;
			continue;
		}
		out[len++] = '/';
		memcpy(out + len, p, (size_t)(q - p));
		len += (size_t)(q - p);
	}
	if (len == 0)
		out[len++] = '/';
	out[len] = '\0';
	return out;
}

/*
 * Where the stack's files must resolve to: the work tree of the git repository
 * that holds dir, as realpath, or dir itself when no repository holds it.
 * *in_repo says which. The repository is the nearest of dir and its parents, by
 * name, with a .git, passing over a parent that is a symbolic link: what a link
 * in the repository points to is not in it, even when that is a repository of
 * its own. Only when no such parent exists (the checkout itself reached through
 * a link, /home/u/ml -> /data/ml) does a .git through a link count.
 */
static int confine_root(char **out, int *in_repo, const char *dir, struct vx_err *err)
{
	char *p = logical_path(dir), *git = NULL, *linked = NULL;
	int rc = 0;

	*out = NULL;
	*in_repo = 0;
	if (!p) {
		rc = vx_err_set(err, VX_ENOMEM, "reading %s: %s", dir,
				errno == ENOMEM ? "out of memory" : strerror(errno));
		goto done;
	}
	for (;;) {
		struct stat sb;
		char *slash;
		int is_link = lstat(p, &sb) == 0 && S_ISLNK(sb.st_mode);

		free(git);
		git = vx_asprintf("%s%s.git", p, strcmp(p, "/") ? "/" : "");
		if (!git) {
			rc = vx_err_set(err, VX_ENOMEM, "reading %s: out of memory", dir);
			goto done;
		}
		if (lstat(git, &sb) == 0) {
			if (!is_link) {
				*out = realpath(p, NULL);
				*in_repo = 1;
				break;
			}
			if (!linked && !(linked = vx_strdup(p))) {
				rc = vx_err_set(err, VX_ENOMEM, "reading %s: out of memory", dir);
				goto done;
			}
		}
		slash = strrchr(p, '/');
		if (!slash || slash == p)
			break;
		*slash = '\0';
	}
	if (!*in_repo && linked) {
		*out = realpath(linked, NULL);
		*in_repo = 1;
	}
	if (!*in_repo)
		*out = realpath(dir, NULL);
	if (!*out)
		rc = vx_err_set(err, errno == ENOENT ? VX_ENOTFOUND : VX_EIO, "reading %s: %s", dir,
				strerror(errno));
done:
	free(p);
	free(git);
	free(linked);
	return rc;
}

/*
 * git versions a symbolic link, not what it points to: a stack file that
 * resolves outside the repository (a file linked out, or the stack directory or
 * one of its parents linked out) could change with no change in git while the
 * plan names a clean commit, and CI's refusal of uncommitted configuration would
 * not see it. Each such file is an error at FILE:1:1. A link that stays inside
 * the repository is read: git versions its target too. Without a repository the
 * files must stay inside the stack directory.
 */
static int confine(const char *dir, char *const *paths, size_t n, struct vx_diags *diags,
		   size_t *nbad, struct vx_err *err)
{
	char *root = NULL, *real = NULL;
	size_t nroot;
	int in_repo, rc;

	*nbad = 0;
	if ((rc = confine_root(&root, &in_repo, dir, err)) < 0 || !root)
		goto done;
	nroot = strlen(root);
	for (size_t i = 0; i < n; i++) {
		free(real);
		real = realpath(paths[i], NULL);
		if (!real) {
			rc = vx_err_set(err, errno == ENOMEM ? VX_ENOMEM : VX_EIO, "reading %s: %s",
					paths[i], strerror(errno));
			goto done;
		}
		if (!strncmp(real, root, nroot) && (real[nroot] == '/' || !strcmp(root, "/")))
			continue;
		(*nbad)++;
		if (in_repo)
			rc = vx_diags_add(diags, paths[i], 1, 1, "this stack file resolves to %s, outside "
					  "the repository %s: git versions only the link, so the "
					  "declaration could change with no change in git while the plan "
					  "names a clean commit; copy the file into the repository instead "
					  "of linking to it", real, root);
		else
			rc = vx_diags_add(diags, paths[i], 1, 1, "this stack file resolves to %s, outside "
					  "the stack directory %s, and no git repository holds the stack; "
					  "copy the file into the stack directory instead of linking to it",
					  real, root);
		if (rc < 0) {
			rc = vx_err_set(err, VX_ENOMEM, "reading %s: out of memory", dir);
			goto done;
		}
	}
done:
	free(root);
	free(real);
	return rc;
}

static int load_dir(struct stack **out, const char *dir, const struct ynode_limits *limits, int lenient,
		    struct vx_diags *diags, struct vx_err *err)
{
	char **paths = NULL, *root = NULL;
	size_t n = 0, nbad = 0;
	int rc, in_repo = 0;

	*out = NULL;
	if ((rc = list_yaml(&paths, &n, dir, err)) < 0)
		return rc;
	rc = confine(dir, paths, n, diags, &nbad, err);
	if (rc == 0 && nbad)
		rc = VX_EINVAL;
	/* The repository's policy binds the stack: found as its files are confined. */
	if (rc == 0)
		rc = confine_root(&root, &in_repo, dir, err);
	if (rc == 0)
		rc = load(out, dir, (const char *const *)paths, NULL, n, limits, in_repo ? root : NULL, NULL, lenient,
			  diags, err);
	free(root);
	free_paths(paths, n);
	return rc;
}

int stack_load(struct stack **out, const char *dir, const struct ynode_limits *limits,
	       struct vx_diags *diags, struct vx_err *err)
{
	return load_dir(out, dir, limits, 0, diags, err);
}

int stack_load_lenient(struct stack **out, const char *dir, const struct stack_source *files, size_t nfiles,
		       const struct stack_source *repo_policy, struct vx_diags *diags, struct vx_err *err)
{
	if (!files)
		return load_dir(out, dir, NULL, 1, diags, err);
	return load(out, dir, NULL, files, nfiles, NULL, NULL, repo_policy, 1, diags, err);
}

/* Whether the n bytes at p hold word (a file without "Stack" holds no Stack). */
static int holds(const char *p, size_t n, const char *word)
{
	size_t w = strlen(word);

	for (const char *end = p + n; (size_t)(end - p) >= w; p++) {
		p = memchr(p, word[0], (size_t)(end - p) - w + 1);
		if (!p)
			return 0;
		if (!memcmp(p, word, w))
			return 1;
	}
	return 0;
}

int stack_peek(struct stack **out, int *jobs, const char *dir, struct vx_err *err)
{
	const struct ynode_limits limits = YNODE_LIMITS_DEFAULT;
	struct vx_diags diags = VX_DIAGS_INIT;
	struct loader L = { &diags, err, 0, 0, 0, 0, "", NULL, NULL, NULL, 0 };
	struct vx_buf data = VX_BUF_INIT;
	struct yfile *yf = NULL;
	struct stack *st = NULL;
	char **paths = NULL;
	size_t n = 0, found = 0, nbad = 0;
	int rc;

	*out = NULL;
	*jobs = 0;
	if ((rc = list_yaml(&paths, &n, dir, err)) < 0)
		goto done;
	/* Nothing read ahead from a file the load will refuse (see confine). */
	if ((rc = confine(dir, paths, n, &diags, &nbad, err)) < 0)
		goto done;
	if (nbad) {
		rc = vx_err_set(err, VX_ENOTFOUND, "%s: no Stack read ahead", dir);
		goto done;
	}
	st = calloc(1, sizeof(*st));
	if (!st || !(st->dir = strdup(dir))) {
		rc = vx_err_set(err, VX_ENOMEM, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < n && !(found && *jobs); i++) {
		/* A file the loader would refuse as too large ends the peek: the load says why. */
		vx_buf_reset(&data);
		if (vx_buf_read_file(&data, paths[i], limits.max_file_bytes, err) < 0) {
			rc = VX_ENOTFOUND;
			goto done;
		}
		if (!*jobs && holds(vx_buf_str(&data), data.len, kind_job.name))
			*jobs = 1;
		if (found || !holds(vx_buf_str(&data), data.len, "Stack"))
			continue;
		yfile_free(yf);
		yf = NULL;
		if (ynode_load_mem(&yf, paths[i], vx_buf_str(&data), data.len, NULL, &diags, err) < 0) {
			rc = VX_ENOTFOUND;
			goto done;
		}
		for (size_t k = 0; k < yf->ndocs && !found; k++) {
			if (yf->docs[k] && doc_kind(&L, yf->docs[k]) == &stack_doc_kind) {
				stack_kinds_read_stack(st, &L, yf->docs[k]);
				found = 1;
			}
		}
	}
	if (!found || L.rc || L.nerr || vx_diags_count(&diags) || !st->name || !st->project) {
		rc = L.rc == VX_ENOMEM ? vx_err_set(err, VX_ENOMEM, "out of memory")
				       : vx_err_set(err, VX_ENOTFOUND, "%s: no Stack read ahead", dir);
		goto done;
	}
	*out = st;
	st = NULL;
	rc = 0;
done:
	stack_free(st);
	yfile_free(yf);
	vx_buf_release(&data);
	vx_diags_release(&diags);
	free_paths(paths, n);
	return rc;
}

/*
 * The length of the value of a top-level "key: value" line at p (letters,
 * digits and "-", plain or quoted, then at most a comment), *val set to
 * it; 0 when the line is not that.
 */
static size_t peek_value(const char *p, const char *end, const char *key, const char **val)
{
	size_t k = strlen(key), n = 0;
	char q = 0;

	if ((size_t)(end - p) <= k || memcmp(p, key, k) || p[k] != ':')
		return 0;
	for (p += k + 1; p < end && (*p == ' ' || *p == '\t'); p++)
		;
	if (p < end && (*p == '"' || *p == '\''))
		q = *p++;
	*val = p;
	while (p + n < end && ((p[n] >= 'a' && p[n] <= 'z') || (p[n] >= 'A' && p[n] <= 'Z') ||
			       (p[n] >= '0' && p[n] <= '9') || p[n] == '-'))
		n++;
	p += n;
	if (q && (p >= end || *p++ != q))
		return 0;
	for (; p < end && (*p == ' ' || *p == '\t'); p++)
		;
	return p == end || *p == '#' || *p == '\r' ? n : 0;
}

/* Adds the n bytes at r to the hints unless there or not a region's name. */
static int hint_add(char ***out, size_t *nout, const char *r, size_t n)
{
	char **grown;

	if (!n || n > 63 || r[0] < 'a' || r[0] > 'z')
		return 0;
	for (size_t i = 0; i < *nout; i++)
		if (strlen((*out)[i]) == n && !memcmp((*out)[i], r, n))
			return 0;
	if (*nout >= 64 || !(grown = realloc(*out, (*nout + 1) * sizeof(*grown))))
		return *nout >= 64 ? 0 : VX_ENOMEM;
	*out = grown;
	if (!(grown[*nout] = vx_asprintf("%.*s", (int)n, r)))
		return VX_ENOMEM;
	(*nout)++;
	return 0;
}

/* The regions of one file's job documents written as a top-level "region: NAME" line. */
static int hint_file(char ***out, size_t *nout, const char *p, size_t len)
{
	const char *end = p + len, *region = NULL, *kind = NULL, *v;
	size_t nregion = 0, nkind = 0, n;
	int rc = 0;

	while (rc == 0 && p <= end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));

		if (!eol)
			eol = end;
		if (eol - p >= 3 && (!memcmp(p, "---", 3) || !memcmp(p, "...", 3))) {
			if (kind && nkind == strlen(kind_job.name) && !memcmp(kind, kind_job.name, nkind))
				rc = hint_add(out, nout, region, nregion);
			region = kind = NULL;
			nregion = nkind = 0;
		} else if ((n = peek_value(p, eol, "region", &v)) != 0) {
			region = v;
			nregion = n;
		} else if ((n = peek_value(p, eol, "kind", &v)) != 0) {
			kind = v;
			nkind = n;
		}
		p = eol + 1;
	}
	if (rc == 0 && kind && nkind == strlen(kind_job.name) && !memcmp(kind, kind_job.name, nkind))
		rc = hint_add(out, nout, region, nregion);
	return rc;
}

int stack_peek_regions(char ***out, size_t *nout, const char *dir, struct vx_err *err)
{
	const struct ynode_limits limits = YNODE_LIMITS_DEFAULT;
	struct vx_diags diags = VX_DIAGS_INIT;
	struct vx_buf data = VX_BUF_INIT;
	char **paths = NULL;
	size_t n = 0, nbad = 0;
	int rc;

	*out = NULL;
	*nout = 0;
	if ((rc = list_yaml(&paths, &n, dir, err)) < 0 || (rc = confine(dir, paths, n, &diags, &nbad, err)) < 0)
		goto done;
	for (size_t i = 0; i < n && !nbad && rc == 0; i++) {
		vx_buf_reset(&data);
		if (vx_buf_read_file(&data, paths[i], limits.max_file_bytes, err) < 0)
			break; /* the load says why */
		if ((rc = hint_file(out, nout, vx_buf_str(&data), data.len)) < 0)
			rc = vx_err_set(err, rc, "out of memory");
	}
done:
	vx_buf_release(&data);
	vx_diags_release(&diags);
	free_paths(paths, n);
	return rc;
}

int stack_same_home(const struct stack *a, const struct stack *b)
{
	return vx_text_same(a->name, b->name) && vx_text_same(a->project, b->project) &&
	       vx_text_same(a->region, b->region) && a->state.backend == b->state.backend &&
	       vx_text_same(a->state.path, b->state.path) &&
	       vx_text_same(a->state.remote, b->state.remote) &&
	       vx_text_same(a->state.branch, b->state.branch) &&
	       vx_text_same(a->state.bucket, b->state.bucket);
}

/* ---------------------------------------------------------------------- */
/* Lookups */

static size_t slot_of(const struct kind *k)
{
	return kind_index(k);
}

size_t stack_count(const struct stack *st, const struct kind *k)
{
	size_t i = slot_of(k);

	return i < KIND_MAX ? st->of[i].n : 0;
}

struct stack_kind_decls *stack_slot(struct stack *st, const struct kind *k)
{
	size_t i = slot_of(k);

	return i < KIND_MAX ? &st->of[i] : NULL;
}

const struct stack_kind_decls *stack_slot_c(const struct stack *st, const struct kind *k)
{
	size_t i = slot_of(k);

	return i < KIND_MAX ? &st->of[i] : NULL;
}

const struct stack_decl *stack_find_in(const struct stack *st, const struct kind *k, const char *name)
{
	size_t n = kind_count_decls(k, st);

	for (size_t i = 0; i < n; i++) {
		const struct stack_decl *d = kind_decl_at(k, st, i);

		if (d->name && !strcmp(d->name, name))
			return d;
	}
	return NULL;
}

const struct stack_decl *stack_find_decl(const struct stack *st, const char *address)
{
	const struct kind *k = kind_of_address(address);
	const char *dot = strchr(address, '.');
	const char *name = dot ? dot + 1 : "";
	size_t plen = dot ? (size_t)(dot - address) : 0;

	if (k)
		return kind_find_decl(k, st, name);
	if (plen == strlen(stack_doc_kind.prefix) && !strncmp(address, stack_doc_kind.prefix, plen) &&
	    st->d.name && !strcmp(st->d.name, name))
		return &st->d;
	return NULL;
}
