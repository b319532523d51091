/*
 * `matrix:` sweeps. The loader's part: a CustomJob document with a matrix
 * is expanded into one job per combination, with GitHub Actions' rules for
 * include and exclude, each combination's values substituted for
 * `${{ matrix.NAME }}` in a copy of the document that shares every node it
 * does not change (so a diagnostic still names the line that wrote the
 * value), then read by stack_kinds_read_job like any other job. Values are
 * the text written in the YAML: `3e-4` stays `3e-4`.
 */
#include "reconcile/sweep.h"
#include "reconcile/stack.h"
#include "reconcile/kind_job_load.h"
#include "reconcile/kind.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile/kind_job.h"
#include "reconcile/load/ynode.h"
#include "reconcile/policy_rules.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/digest.h"
#include "util/banned.h"

/* ---------------------------------------------------------------------- */
/* Addresses and labels */

/* Whether the combination "k=v,k=v" (cut at its end) holds the pair "k=v" (len bytes). */
static int combo_has(const char *combo, size_t clen, const char *pair, size_t len)
{
	const char *p = combo, *end = combo + clen;

	while (p < end) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		size_t n = c ? (size_t)(c - p) : (size_t)(end - p);

		if (n == len && !memcmp(p, pair, len))
			return 1;
		p += n + 1;
	}
	return 0;
}

int sweep_address_matches(const char *target, const char *address)
{
	const char *tb = strchr(target, '['), *ab;
	size_t tl, al;

	if (!strcmp(target, address))
		return 1;
	ab = strchr(address, '[');
	if (!ab)
		return 0;
	al = strlen(address);
	if (address[al - 1] != ']')
		return 0;
	if (!tb) /* the whole sweep */
		return (size_t)(ab - address) == strlen(target) && !strncmp(target, address, (size_t)(ab - address));
	tl = strlen(target);
	if (tb - target != ab - address || strncmp(target, address, (size_t)(ab - address)) ||
	    target[tl - 1] != ']')
		return 0;
	/* a slice: every pair of the target is in the run's combination */
	for (const char *p = tb + 1, *end = target + tl - 1; p < end;) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		size_t n = c ? (size_t)(c - p) : (size_t)(end - p);

		if (!n || !combo_has(ab + 1, al - (size_t)(ab - address) - 2, p, n))
			return 0;
		p += n + 1;
	}
	return 1;
}

int sweep_address_is_run(const char *address)
{
	size_t n = strlen(address);

	return n && strchr(address, '[') && address[n - 1] == ']';
}

void sweep_job_label(char out[SWEEP_LABEL_MAX + 1], const char *name)
{
	const char *b = strchr(name, '[');
	char hex[VX_SHA256_HEX_LEN + 1];
	size_t n;

	if (!b) {
		snprintf(out, SWEEP_LABEL_MAX + 1, "%s", name);
		return;
	}
	if (vx_digest_sha256_hex(hex, name, strlen(name)) < 0)
		snprintf(hex, sizeof(hex), "%s", "0000000000000");
	n = (size_t)(b - name);
	if (n > 48)
		n = 48;
	snprintf(out, SWEEP_LABEL_MAX + 1, "%.*s--%.13s", (int)n, name, hex);
}

/* ---------------------------------------------------------------------- */
/* The matrix */

struct matrix {
	const char **keys;          /* axes first (declared order), then include's own keys */
	const struct ynode **key_at;
	size_t nkeys, naxes;
	const struct ynode **axis_vals; /* per axis: its sequence node */
	const char **vals;          /* ncombos * nkeys values (NULL: not set), borrowed */
	unsigned char *added;       /* per combination: made by include, not by the axes */
	size_t ncombos, cap;
};

static void matrix_release(struct matrix *m)
{
	free(m->keys);
	free(m->key_at);
	free(m->axis_vals);
	free(m->vals);
	free(m->added);
}

static int key_index(const struct matrix *m, const char *k)
{
	for (size_t i = 0; i < m->nkeys; i++)
		/* keys[0..nkeys) are all stored before nkeys grows past them.
		 * NOLINTNEXTLINE(clang-analyzer-core.NonNullParamChecker) */
		if (!strcmp(m->keys[i], k))
			return (int)i;
	return -1;
}

/* A value that can be part of an address and a state key. */
static int value_ok(const char *s)
{
	if (!*s || strlen(s) > 40)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '.' || *s == '_' || *s == '-'))
			return 0;
	return 1;
}

static int name_ok(const char *s)
{
	if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')) || strlen(s) > 40)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '_' || *s == '-'))
			return 0;
	return 1;
}

/* A matrix value: a scalar whose text can be part of an address. */
static const char *read_value(struct loader *L, const struct ynode *v, const char *path)
{
	if (v->kind != YNODE_SCALAR || ynode_is_null(v)) {
		stack_err(L, v, "%s: expected a value (a number or a word), got %s", path, stack_type_of(v));
		return NULL;
	}
	if (!value_ok(v->str)) {
		stack_err(L, v, "%s: \"%.60s\" cannot be part of a run's address; use 1 to 40 letters, "
			  "digits, \".\", \"_\" and \"-\"", path, v->str);
		return NULL;
	}
	return v->str;
}

/* Grows the combinations to hold one more; its values all unset. NULL on OOM. */
static const char **combo_new(struct matrix *m, int added)
{
	if (m->ncombos == m->cap) {
		size_t nc = m->cap ? 2 * m->cap : 16;
		const char **nv = realloc(m->vals, nc * (m->nkeys ? m->nkeys : 1) * sizeof(*nv));
		unsigned char *na;

		if (!nv)
			return NULL;
		m->vals = nv;
		na = realloc(m->added, nc);
		if (!na)
			return NULL;
		m->added = na;
		m->cap = nc;
	}
	m->added[m->ncombos] = (unsigned char)added;
	memset(&m->vals[m->ncombos * m->nkeys], 0, m->nkeys * sizeof(*m->vals));
	return &m->vals[m->ncombos++ * m->nkeys];
}

/* Whether combination c holds every pair of entry e (a mapping of values). */
static int entry_matches(const struct matrix *m, const char *const *c, const struct ynode *e, int axes_only)
{
	for (size_t i = 0; i < e->n; i++) {
		int k = key_index(m, e->pairs[i].key->str);

		if (k < 0 || (axes_only && (size_t)k >= m->naxes))
			continue;
		if (e->pairs[i].value->kind != YNODE_SCALAR || !c[k] || strcmp(c[k], e->pairs[i].value->str))
			return 0;
	}
	return 1;
}

/*
 * One axis k: v of the matrix, its values checked (duplicates only while
 * *ok, as the whole matrix has been good so far), recorded in m, and *total
 * multiplied by its length. *ok is cleared on a problem (reported).
 */
static void read_axis(struct matrix *m, struct loader *L, const struct ynode *k,
		      const struct ynode *v, uint64_t *total, int *ok)
{
	if (!name_ok(k->str)) {
		stack_err(L, k, "matrix.%.60s: an axis name is a letter, then letters, digits, \"_\" "
				"and \"-\", at most 40",
			  k->str);
		*ok = 0;
		return;
	}
	if (v->kind != YNODE_SEQ || !v->n) {
		stack_err(L, v, "matrix.%s: expected a non-empty list of values, got %s", k->str,
			  v->kind == YNODE_SEQ ? "an empty list" : stack_type_of(v));
		*ok = 0;
		return;
	}
	for (size_t a = 0; a < v->n; a++) {
		char path[128];

		snprintf(path, sizeof(path), "matrix.%s[%zu]", k->str, a);
		if (!read_value(L, v->items[a], path))
			*ok = 0;
		for (size_t b = 0; b < a && *ok; b++)
			if (v->items[b]->kind == YNODE_SCALAR && !strcmp(v->items[b]->str, v->items[a]->str)) {
				stack_err(L, v->items[a], "%s: \"%s\" is already in the list (item %zu)",
					  path, v->items[a]->str, b);
				*ok = 0;
			}
	}
	if (*total <= STACK_MAX_SWEEP_RUNS)
		*total *= v->n;
	m->axis_vals[m->naxes] = v;
	m->key_at[m->naxes] = k;
	m->keys[m->naxes++] = k->str;
}

/*
 * The entries of matrix.include (include 1) or matrix.exclude: mappings of
 * values. exclude may name only axes; include may add keys of its own, which
 * become m's keys after the axes. *ok is cleared on a problem (reported).
 */
static void read_entries(struct matrix *m, struct loader *L, const struct ynode *list,
			 int include, int *ok)
{
	const char *what = include ? "include" : "exclude";

	if (list->kind != YNODE_SEQ) {
		stack_err(L, list, "matrix.%s: expected a list of mappings, got %s", what, stack_type_of(list));
		*ok = 0;
		return;
	}
	for (size_t i = 0; i < list->n; i++) {
		const struct ynode *e = list->items[i];

		if (e->kind != YNODE_MAP || !e->n) {
			stack_err(L, e, "matrix.%s[%zu]: expected a mapping of values ({lr: 1e-3}), got %s",
				  what, i, e->kind == YNODE_MAP ? "an empty mapping" : stack_type_of(e));
			*ok = 0;
			continue;
		}
		for (size_t p = 0; p < e->n; p++) {
			char path[160];
			const char *k = e->pairs[p].key->str;

			snprintf(path, sizeof(path), "matrix.%s[%zu].%.60s", what, i, k);
			if (!read_value(L, e->pairs[p].value, path))
				*ok = 0;
			if (key_index(m, k) >= 0)
				continue;
			if (!include) {
				stack_err(L, e->pairs[p].key, "matrix.exclude[%zu]: \"%.60s\" is not an axis of "
							      "the matrix; exclude names values of the axes",
					  i, k);
				*ok = 0;
			} else if (!name_ok(k)) {
				stack_err(L, e->pairs[p].key, "%s: a matrix name is a letter, then letters, "
							      "digits, \"_\" and \"-\", at most 40",
					  path);
				*ok = 0;
			} else {
				m->key_at[m->nkeys] = e->pairs[p].key;
				m->keys[m->nkeys++] = k;
			}
		}
	}
}

/*
 * The product of the axes (total combinations), the first axis varying
 * slowest, less those an entry of exc matches. -1 on OOM.
 */
static int expand_product(struct matrix *m, const struct ynode *exc, uint64_t total)
{
	size_t *idx = calloc(m->naxes + 1, sizeof(*idx));

	if (!idx)
		return -1;
	for (uint64_t n = 0; m->naxes && n < total; n++) {
		const char **c = combo_new(m, 0);
		int drop = 0;

		if (!c) {
			free(idx);
			return -1;
		}
		for (size_t a = 0; a < m->naxes; a++)
			/* axis_vals[0..naxes) are all stored before naxes grows past them.
			 * NOLINTNEXTLINE(clang-analyzer-core.NullDereference) */
			c[a] = m->axis_vals[a]->items[idx[a]]->str;
		for (size_t i = 0; exc && !drop && i < exc->n; i++)
			drop = entry_matches(m, c, exc->items[i], 0);
		if (drop)
			m->ncombos--;
		for (size_t a = m->naxes; a-- > 0;) {
			if (++idx[a] < m->axis_vals[a]->n)
				break;
			idx[a] = 0;
		}
	}
	free(idx);
	return 0;
}

/*
 * include: each entry is added to every combination of the axes whose axis
 * values it does not change (later entries overwrite values added by earlier
 * ones), else it is a combination of its own. -1 on OOM.
 */
static int apply_includes(struct matrix *m, const struct ynode *inc)
{
	for (size_t i = 0; inc && i < inc->n; i++) {
		const struct ynode *e = inc->items[i];
		size_t nbase = m->ncombos;
		int merged = 0;

		for (size_t c = 0; c < nbase; c++) {
			const char **cv = &m->vals[c * m->nkeys];

			if (m->added[c] || !entry_matches(m, cv, e, 1))
				continue;
			merged = 1;
			for (size_t p = 0; p < e->n; p++)
				cv[key_index(m, e->pairs[p].key->str)] = e->pairs[p].value->str;
		}
		if (!merged) {
			const char **cv = combo_new(m, 1);

			if (!cv)
				return -1;
			for (size_t p = 0; p < e->n; p++)
				cv[key_index(m, e->pairs[p].key->str)] = e->pairs[p].value->str;
		}
	}
	return 0;
}

/*
 * Reads the matrix node and expands it. Problems are reported; returns 1
 * with m set when the matrix is good, 0 when not, -1 on OOM.
 */
static int matrix_read(struct matrix *m, struct loader *L, const struct ynode *mn)
{
	const struct ynode *inc = NULL, *exc = NULL;
	size_t nextra = 0;
	uint64_t total = 1;
	int ok = 1;

	if (mn->kind != YNODE_MAP || !mn->n) {
		stack_err(L, mn, "matrix: expected a mapping of axes (lr: [1e-4, 3e-4]), got %s",
			  mn->kind == YNODE_MAP ? "an empty mapping" : stack_type_of(mn));
		return 0;
	}
	inc = ynode_get(mn, "include");
	exc = ynode_get(mn, "exclude");
	if (inc && inc->kind == YNODE_SEQ)
		for (size_t i = 0; i < inc->n; i++)
			nextra += inc->items[i]->kind == YNODE_MAP ? inc->items[i]->n : 0;
	m->keys = calloc(mn->n + nextra + 1, sizeof(*m->keys));
	m->key_at = calloc(mn->n + nextra + 1, sizeof(*m->key_at));
	m->axis_vals = calloc(mn->n + 1, sizeof(*m->axis_vals));
	if (!m->keys || !m->key_at || !m->axis_vals)
		goto oom;
	for (size_t i = 0; i < mn->n; i++) {
		const struct ynode *k = mn->pairs[i].key;

		if (strcmp(k->str, "include") && strcmp(k->str, "exclude"))
			read_axis(m, L, k, mn->pairs[i].value, &total, &ok);
	}
	m->nkeys = m->naxes;
	/* exclude first: include's own keys come after the axes, and exclude may not name them */
	if (exc)
		read_entries(m, L, exc, 0, &ok);
	if (inc)
		read_entries(m, L, inc, 1, &ok);
	if (!ok)
		return 0;
	if (total + (inc ? inc->n : 0) > STACK_MAX_SWEEP_RUNS) {
		stack_err(L, mn, "matrix: expands to more than %d runs; split the sweep or drop values",
			  STACK_MAX_SWEEP_RUNS);
		return 0;
	}
	if (expand_product(m, exc, total) < 0 || apply_includes(m, inc) < 0)
		goto oom;
	if (!m->ncombos) {
		stack_err(L, mn, "matrix: exclude leaves no run; remove an exclude entry");
		return 0;
	}
	return 1;
oom:
	stack_oom(L);
	return -1;
}

/* "lr=3e-4,batch=64": the axes the combination has in declared order, then
 * (for a combination include made) its own keys. */
static int combo_name(struct vx_buf *b, const struct matrix *m, size_t c)
{
	const char *const *cv = &m->vals[c * m->nkeys];
	size_t upto = m->added[c] ? m->nkeys : m->naxes;
	int first = 1;

	for (size_t k = 0; k < upto; k++) {
		if (!cv[k])
			continue;
		if (vx_buf_printf(b, "%s%s=%s", first ? "" : ",", m->keys[k], cv[k]) < 0)
			return -1;
		first = 0;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* ${{ matrix.NAME }} */

/* The nodes and strings made for one run's document, freed once it is read. */
struct arena {
	void **blocks;
	size_t n, cap;
	int oom;
};

static void *arena_keep(struct arena *a, void *p)
{
	if (!p) {
		a->oom = 1;
		return NULL;
	}
	if (VX_ALLOC_GROW(a->blocks, a->n + 1, a->cap) < 0) {
		free(p);
		a->oom = 1;
		return NULL;
	}
	a->blocks[a->n++] = p;
	return p;
}

static void arena_clear(struct arena *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->blocks[i]);
	a->n = 0;
}

/* What an expression names: a matrix value, or a field of a job this one waits for. */
struct expr {
	int jobs;            /* 0: ${{ matrix.NAME }}; 1: ${{ jobs.NAME.FIELD }} */
	const char *name;    /* borrowed into the text */
	size_t nlen;
	int field;           /* jobs: EXPR_OUTPUT_DIR or EXPR_RUN */
	const char *end;     /* just past the closing braces */
};

enum { EXPR_OUTPUT_DIR = 1, EXPR_RUN };

static const char *word_end(const char *p)
{
	while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
	       *p == '_' || *p == '-')
		p++;
	return p;
}

/* Parses the expression at s ("${{ matrix.lr }}", "${{ jobs.train.outputDir }}"): 0, or -1 when not one. */
static int parse_expr(const char *s, struct expr *e)
{
	const char *p = s + 3, *f;

	memset(e, 0, sizeof(*e));
	while (*p == ' ')
		p++;
	if (!strncmp(p, "matrix.", 7)) {
		p += 7;
	} else if (!strncmp(p, "jobs.", 5)) {
		p += 5;
		e->jobs = 1;
	} else {
		return -1;
	}
	e->name = p;
	p = word_end(p);
	e->nlen = (size_t)(p - e->name);
	if (e->jobs) {
		if (*p++ != '.')
			return -1;
		f = p;
		p = word_end(p);
		if ((size_t)(p - f) == 9 && !strncmp(f, "outputDir", 9))
			e->field = EXPR_OUTPUT_DIR;
		else if ((size_t)(p - f) == 3 && !strncmp(f, "run", 3))
			e->field = EXPR_RUN;
		else
			return -1;
	}
	while (*p == ' ')
		p++;
	if (!e->nlen || strncmp(p, "}}", 2))
		return -1;
	e->end = p + 2;
	return 0;
}

/* What expressions may name: the matrix (NULL: none) and its combination
 * (NULL while checking), and the jobs loaded so far with the document's
 * after: list. */
struct ectx {
	const struct matrix *m;
	const char *const *cv;
	const struct stack *st;
	const struct ynode *after;
};

/* Whether the after: list names job NAME (job.NAME or a slice of it). */
static int after_names(const struct ynode *after, const char *name, size_t nlen)
{
	for (size_t i = 0; after && after->kind == YNODE_SEQ && i < after->n; i++) {
		const struct ynode *it = after->items[i];

		const char *n = it->kind == YNODE_SCALAR ? kind_address_name(&kind_job, it->str) : NULL;

		if (n && !strncmp(n, name, nlen) && (n[nlen] == '\0' || n[nlen] == '['))
			return 1;
	}
	return 0;
}

/* The value of ${{ jobs.NAME.FIELD }} from the jobs loaded so far: owned, or NULL with *why set. */
static char *job_value(const struct ectx *x, const struct expr *e, const char **why)
{
	const struct stack_job *j = NULL;
	const char *dir = NULL;

	/* not found: unknown or in a cycle, both said at after: (stack_after_order) */
	*why = NULL;
	for (size_t i = 0; x->st && i < stack_nsweeps(x->st); i++)
		if (strlen(stack_sweeps(x->st, NULL)[i].name) == e->nlen && !strncmp(stack_sweeps(x->st, NULL)[i].name, e->name, e->nlen)) {
			j = stack_sweeps(x->st, NULL)[i].n ? &stack_jobs(x->st, NULL)[stack_sweeps(x->st, NULL)[i].first] : NULL;
			dir = stack_sweeps(x->st, NULL)[i].output_dir;
		}
	for (size_t i = 0; x->st && !j && i < stack_count(x->st, &kind_job); i++)
		/* jobs holds njobs entries (and every sweep's runs): not NULL when i < njobs.
		 * NOLINTNEXTLINE(clang-analyzer-core.NullDereference) */
		if (!stack_jobs(x->st, NULL)[i].sweep && stack_jobs(x->st, NULL)[i].d.name && strlen(stack_jobs(x->st, NULL)[i].d.name) == e->nlen &&
		    !strncmp(stack_jobs(x->st, NULL)[i].d.name, e->name, e->nlen)) {
			j = &stack_jobs(x->st, NULL)[i];
			dir = j->output_dir;
		}
	if (!j)
		return NULL;
	if (e->field == EXPR_RUN)
		return vx_asprintf("%lld", (long long)j->run);
	*why = "sets no spec.baseOutputDirectory.outputUriPrefix";
	return dir ? vx_strdup(dir) : NULL;
}

/* The column of byte off of scalar n, when its text is on one line as written. */
static unsigned col_of(const struct ynode *n, size_t off)
{
	if (memchr(n->str, '\n', n->len) || off > 4000)
		return n->col;
	return n->col + (unsigned)off + (n->style == YSTYLE_QUOTED ? 1 : 0);
}

/* ${{ jobs.NAME.* }} at where: 1 when NAME is in after: and has the value asked for. */
static int check_jobs_expr(struct loader *L, const struct ectx *x, const struct expr *e,
			   const struct ynode *where, const struct vx_buf *path)
{
	const char *why;
	char *v;

	if (!after_names(x->after, e->name, e->nlen)) {
		stack_err(L, where, "%s: jobs.%.*s: a job is named only in after: (add "
				    "job.%.*s to after:)",
			  path->data ? path->data : "", (int)e->nlen,
			  e->name, (int)e->nlen, e->name);
		return 0;
	}
	if (!(v = job_value(x, e, &why))) {
		if (why)
			stack_err(L, where, "%s: jobs.%.*s %s", path->data ? path->data : "",
				  (int)e->nlen, e->name, why);
		return 0;
	}
	free(v);
	return 1;
}

/* ${{ matrix.NAME }} at where: 1 when NAME is one of the matrix's keys. */
static int check_matrix_expr(struct loader *L, const struct matrix *m, const struct expr *e,
			     const struct ynode *where, const struct vx_buf *path)
{
	struct vx_buf names = VX_BUF_INIT;

	for (size_t k = 0; m && k < m->nkeys; k++)
		if (strlen(m->keys[k]) == e->nlen && !strncmp(m->keys[k], e->name, e->nlen))
			return 1;
	for (size_t i = 0; m && i < m->nkeys; i++)
		if (vx_buf_printf(&names, "%s%s", i ? ", " : "", m->keys[i]) < 0)
			stack_oom(L);
	if (m)
		stack_err(L, where, "%s: unknown matrix name \"%.*s\" (the matrix has %s)",
			  path->data ? path->data : "", (int)e->nlen, e->name,
			  names.data ? names.data : "none");
	else
		stack_err(L, where, "%s: matrix.%.*s: this job has no matrix:",
			  path->data ? path->data : "", (int)e->nlen, e->name);
	vx_buf_release(&names);
	return 0;
}

/* Every ${{ }} of scalar n, each reported at its own column: 1 when all are good. */
static int check_scalar_exprs(struct loader *L, const struct ectx *x, const struct ynode *n,
			      const struct vx_buf *path)
{
	int ok = 1;

	for (const char *s = strstr(n->str, "${{"); s; s = strstr(s + 3, "${{")) {
		struct ynode where = *n;
		struct expr e;

		where.col = col_of(n, (size_t)(s - n->str));
		if (parse_expr(s, &e) < 0) {
			stack_err(L, &where, "%s: \"%.40s\" is not an expression vx knows; write "
					     "${{ matrix.NAME }}, ${{ jobs.NAME.outputDir }} or ${{ jobs.NAME.run }}",
				  path->data ? path->data : "", s);
			ok = 0;
			continue;
		}
		if (!(e.jobs ? check_jobs_expr(L, x, &e, &where, path)
			     : check_matrix_expr(L, x->m, &e, &where, path)))
			ok = 0;
	}
	return ok;
}

/* Checks every expression of the document once, before any run: 1 when all are good. */
static int check_exprs(struct loader *L, const struct ectx *x, const struct ynode *n,
		       struct vx_buf *path, size_t depth)
{
	size_t at = path->len;
	int ok = 1;

	if (depth > 64)
		return 1;
	if (n->kind == YNODE_SCALAR)
		return check_scalar_exprs(L, x, n, path);
	for (size_t i = 0; i < n->n; i++) {
		const struct ynode *v;

		path->len = at;
		if (n->kind == YNODE_SEQ) {
			v = n->items[i];
			if (vx_buf_printf(path, "[%zu]", i) < 0)
				stack_oom(L);
		} else {
			v = n->pairs[i].value;
			if (depth == 0 && (!strcmp(n->pairs[i].key->str, "matrix") ||
					   !strcmp(n->pairs[i].key->str, "name")))
				continue;
			if (vx_buf_printf(path, "%s%s", at ? "." : "", n->pairs[i].key->str) < 0)
				stack_oom(L);
		}
		if (!check_exprs(L, x, v, path, depth + 1))
			ok = 0;
		path->len = at;
		if (path->data)
			path->data[at] = '\0';
	}
	return ok;
}

/* scalar n's text with combination cv's values substituted; NULL when unchanged or OOM. */
static struct ynode *subst_scalar(struct arena *a, const struct ectx *x, const struct ynode *n)
{
	const struct matrix *m = x->m;
	const char *const *cv = x->cv;
	struct vx_buf b = VX_BUF_INIT;
	const char *p = n->str, *s;
	struct ynode *out;
	int bad = 0;

	if (!strstr(p, "${{"))
		return NULL;
	while ((s = strstr(p, "${{")) != NULL) {
		const char *why;
		struct expr e;
		int k = -1;

		if (vx_buf_add(&b, p, (size_t)(s - p)) < 0 || parse_expr(s, &e) < 0) {
			bad = 1;
			break;
		}
		if (e.jobs) {
			char *v = job_value(x, &e, &why);

			/* unknown: kept as written, and check_exprs says why */
			if (v ? vx_buf_adds(&b, v) < 0 : vx_buf_add(&b, s, (size_t)(e.end - s)) < 0)
				bad = 1;
			free(v);
			p = e.end;
			continue;
		}
		for (size_t i = 0; m && i < m->nkeys && k < 0; i++)
			if (strlen(m->keys[i]) == e.nlen && !strncmp(m->keys[i], e.name, e.nlen))
				k = (int)i;
		if (k >= 0 && cv && cv[k] && vx_buf_adds(&b, cv[k]) < 0)
			bad = 1;
		p = e.end;
	}
	if (bad || vx_buf_adds(&b, p) < 0) {
		vx_buf_release(&b);
		a->oom = 1;
		return NULL;
	}
	out = arena_keep(a, calloc(1, sizeof(*out)));
	if (!out || !arena_keep(a, b.data ? b.data : calloc(1, 1))) {
		if (out)
			a->oom = 1;
		return NULL;
	}
	*out = *n;
	out->str = a->blocks[a->n - 1];
	out->len = strlen(out->str);
	return out;
}

/* n with the combination's values substituted, sharing what does not change. */
static const struct ynode *subst(struct arena *a, const struct ectx *x, const struct ynode *n, size_t depth)
{
	struct ynode *out = NULL;

	if (a->oom || depth > 64)
		return n;
	if (n->kind == YNODE_SCALAR) {
		out = subst_scalar(a, x, n);
		return out ? out : n;
	}
	for (size_t i = 0; i < n->n; i++) {
		const struct ynode *v = n->kind == YNODE_SEQ ? n->items[i] : n->pairs[i].value;
		const struct ynode *nv = subst(a, x, v, depth + 1);

		if (nv == v)
			continue;
		if (!out) {
			size_t sz = n->kind == YNODE_SEQ ? sizeof(*n->items) : sizeof(*n->pairs);
			void *arr = arena_keep(a, malloc(n->n * sz));

			out = arena_keep(a, malloc(sizeof(*out)));
			if (!arr || !out)
				return n;
			*out = *n;
			memcpy(arr, n->kind == YNODE_SEQ ? (const void *)n->items : (const void *)n->pairs, n->n * sz);
			if (n->kind == YNODE_SEQ)
				out->items = arr;
			else
				out->pairs = arr;
		}
		if (n->kind == YNODE_SEQ)
			out->items[i] = (struct ynode *)(uintptr_t)nv;
		else
			out->pairs[i].value = (struct ynode *)(uintptr_t)nv;
	}
	return out ? out : n;
}

/* The document a run reads: doc without the sweep's own keys, substituted,
 * with the run's output directory under spec.baseOutputDirectory. */
static const struct ynode *run_doc(struct arena *a, const struct ectx *base, size_t c, const char *combo,
				   const struct ynode *doc)
{
	struct ectx x = *base;
	const struct ynode *sub;

	x.cv = &x.m->vals[c * x.m->nkeys];
	sub = subst(a, &x, doc, 0);
	struct ynode *out = arena_keep(a, malloc(sizeof(*out)));
	struct ynode_pair *pairs = arena_keep(a, calloc(doc->n + 1, sizeof(*pairs)));
	const struct ynode *spec, *bod, *prefix, *oprefix;

	if (!out || !pairs)
		return NULL;
	*out = *sub;
	out->n = 0;
	out->pairs = pairs;
	for (size_t i = 0; i < sub->n; i++) {
		const char *k = sub->pairs[i].key->str;

		if (strcmp(k, "matrix") && strcmp(k, "maxParallel") && strcmp(k, "maxFailed"))
			pairs[out->n++] = sub->pairs[i];
	}
	/* Each run its own output directory, unless the spec makes it per run. */
	oprefix = ynode_get(ynode_get(ynode_get(doc, "spec"), "baseOutputDirectory"), "outputUriPrefix");
	spec = ynode_get(out, "spec");
	bod = ynode_get(spec, "baseOutputDirectory");
	prefix = ynode_get(bod, "outputUriPrefix");
	if (prefix && prefix->kind == YNODE_SCALAR && bod->kind == YNODE_MAP && spec->kind == YNODE_MAP &&
	    !strstr(oprefix->str, "${{")) {
		size_t len = prefix->len;
		char *s;
		struct ynode *np, *nb, *ns;
		struct ynode_pair *bp, *sp;

		while (len && prefix->str[len - 1] == '/')
			len--;
		s = arena_keep(a, vx_asprintf("%.*s/%s/", (int)len, prefix->str, combo));
		np = arena_keep(a, malloc(sizeof(*np)));
		nb = arena_keep(a, malloc(sizeof(*nb)));
		ns = arena_keep(a, malloc(sizeof(*ns)));
		bp = arena_keep(a, malloc((bod->n + 1) * sizeof(*bp)));
		sp = arena_keep(a, malloc((spec->n + 1) * sizeof(*sp)));
		if (!s || !np || !nb || !ns || !bp || !sp)
			return NULL;
		*np = *prefix;
		np->str = s;
		np->len = strlen(s);
		*nb = *bod;
		memcpy(bp, bod->pairs, bod->n * sizeof(*bp));
		nb->pairs = bp;
		for (size_t i = 0; i < nb->n; i++)
			if (!strcmp(bp[i].key->str, "outputUriPrefix"))
				bp[i].value = np;
		*ns = *spec;
		memcpy(sp, spec->pairs, spec->n * sizeof(*sp));
		ns->pairs = sp;
		for (size_t i = 0; i < ns->n; i++)
			if (!strcmp(sp[i].key->str, "baseOutputDirectory"))
				sp[i].value = nb;
		for (size_t i = 0; i < out->n; i++)
			if (!strcmp(pairs[i].key->str, "spec"))
				pairs[i].value = ns;
	}
	return a->oom ? NULL : out;
}

/* ---------------------------------------------------------------------- */
/* Reading a sweep */

/* Whether scalar position (line, col) holds an expression in doc. */
static int at_expr(const struct ynode *n, unsigned line, unsigned col, size_t depth)
{
	if (depth > 64)
		return 0;
	if (n->kind == YNODE_SCALAR)
		return n->line == line && n->col == col && strstr(n->str, "${{") != NULL;
	for (size_t i = 0; i < n->n; i++)
		if (at_expr(n->kind == YNODE_SEQ ? n->items[i] : n->pairs[i].value, line, col, depth + 1))
			return 1;
	return 0;
}

struct seen_msgs {
	char **items;
	size_t n;
};

/* Where one run's problem is reported. */
struct run_place {
	const char *file;
	unsigned line, col;
};

/*
 * Where one run's problem it is reported: a problem in a value the matrix
 * wrote is the combination's, at the matrix (mkey) with the run named; any
 * other is the document's, where it is written, once (a repeat: 0). *msg
 * (owned) and *at get the message and position. 1, 0, or -1 on OOM.
 */
static int run_diag_place(char **msg, struct run_place *at, const struct vx_diag *it, const struct ynode *doc,
			  const struct ynode *mkey, const char *base_prefix, const char *runname,
			  struct seen_msgs *seen)
{
	size_t plen = strlen(base_prefix);
	const char *rest = strncmp(it->msg, base_prefix, plen) ? it->msg : it->msg + plen;
	char *key, **ni;

	*msg = NULL;
	if (at_expr(doc, it->line, it->col, 0) || (it->msg != rest && strstr(rest, "outputUriPrefix"))) {
		at->file = mkey->file;
		at->line = mkey->line;
		at->col = mkey->col;
		*msg = vx_asprintf("CustomJob \"%s\": %s (the value written at line %u)", runname, rest, it->line);
		return *msg ? 1 : -1;
	}
	at->file = it->file;
	at->line = it->line;
	at->col = it->col;
	if (!(*msg = vx_strdup(it->msg)) || !(key = vx_asprintf("%u:%u:%s", it->line, it->col, it->msg)))
		return -1;
	for (size_t k = 0; k < seen->n; k++)
		if (!strcmp(seen->items[k], key)) {
			free(key);
			return 0;
		}
	if (!(ni = realloc(seen->items, (seen->n + 1) * sizeof(*ni)))) {
		free(key);
		return -1;
	}
	seen->items = ni;
	seen->items[seen->n++] = key;
	return 1;
}

/* Moves one run's diagnostics into the loader's, each where run_diag_place says. */
static void move_run_diags(struct loader *L, struct vx_diags *sub, const struct ynode *doc,
			   const struct ynode *mkey, const char *base_prefix, const char *runname,
			   struct seen_msgs *seen)
{
	for (size_t i = 0; i < sub->n && !L->rc; i++) {
		struct run_place at;
		char *msg;
		int rc = run_diag_place(&msg, &at, &sub->items[i], doc, mkey, base_prefix, runname, seen);

		if (rc < 0 || (rc > 0 && vx_diags_add(L->diags, at.file, at.line, at.col, "%s", msg) < 0))
			stack_oom(L);
		free(msg);
	}
	L->diags->dropped += sub->dropped;
}

/*
 * The same for one run's policy violations (held while it was read), into
 * the loader's, each about the run's address: a repeat is kept (the run is
 * held as well) but said once.
 */
static void move_run_violations(struct loader *L, struct policy_rules *sub, const struct ynode *doc,
				const struct ynode *mkey, const char *base_prefix, const char *runname,
				const char *address, struct seen_msgs *seen)
{
	for (size_t i = 0; i < sub->nviolations && !L->rc; i++) {
		const struct policy_violation *v = &sub->violations[i];
		struct vx_diag it = { v->file, v->line, v->col, v->msg, 0 };
		struct run_place at;
		char *msg;
		int rc = run_diag_place(&msg, &at, &it, doc, mkey, base_prefix, runname, seen);

		if (rc < 0 || policy_rules_add_violation(L->violations, at.file, at.line, at.col, address, msg) < 0)
			stack_oom(L);
		else {
			L->violations->violations[L->violations->nviolations - 1].repeat = rc == 0;
			L->violations->violations[L->violations->nviolations - 1].rung = v->rung;
		}
		free(msg);
	}
	policy_rules_violations_release(sub);
}

static void read_limit(struct loader *L, const struct ynode *doc, const char *key, int64_t *out)
{
	const struct ynode *v;
	int64_t x;

	if (stack_get_int(&x, &v, L, doc, "", key, 0)) {
		if (x < 1)
			stack_err(L, v, "%s: must be at least 1, got %lld", key, (long long)x);
		else
			*out = x;
	}
}

/* What reading one sweep's runs needs, from one run to the next. */
struct sweep_runs {
	struct stack *st;
	struct loader *L;
	const struct ynode *doc, *mkey;
	const struct spec_env *env;
	const char *name;	 /* the sweep's */
	const char *base_prefix; /* the messages' prefix for the document */
	const struct matrix *m;
	const struct ectx *x;
	struct arena a;	       /* one run's document, cleared after it is read */
	struct seen_msgs msgs; /* the document's messages already moved */
	struct vx_buf combo;
};

/*
 * Records the sweep of R's document as the next of the job kind's sweeps (already
 * allocated, with its limits read) and makes room in its jobs for its runs
 * and spare more. -1 on OOM (not recorded).
 */
static int sweep_record(struct sweep_runs *R, struct stack_sweep *sw, size_t spare)
{
	struct stack_kind_decls *js = stack_job_slot(R->st);
	struct stack_job_more *jm = js->more;
	struct stack_job *nj = realloc(js->items, (js->n + R->m->ncombos + spare + 1) * sizeof(*nj));
	const struct ynode *op;

	if (!nj)
		return -1;
	js->items = nj;
	memset(&nj[js->n], 0, (R->m->ncombos + spare + 1) * sizeof(*nj));
	sw->name = strdup(R->name);
	sw->address = vx_asprintf("%s.%s", kind_job.prefix, R->name);
	sw->file = strdup(R->mkey->file);
	if (!sw->name || !sw->address || !sw->file)
		return -1;
	sw->line = R->mkey->line;
	sw->col = R->mkey->col;
	op = ynode_get(ynode_get(ynode_get(R->doc, "spec"), "baseOutputDirectory"), "outputUriPrefix");
	if (op && op->kind == YNODE_SCALAR && !ynode_is_null(op) && !strstr(op->str, "${{") &&
	    !(sw->output_dir = strdup(op->str)))
		return -1;
	sw->first = js->n;
	jm->nsweeps++;
	return 0;
}

/*
 * Names run j "SWEEP[k=v,...]" (rn, owned from here) with its address, and
 * shows that name when the document sets no displayName. -1 on OOM (not recorded).
 */
static int run_name(struct stack_job *j, const struct ynode *doc, char *rn)
{
	char *ra = vx_asprintf("%s.%s", kind_job.prefix, rn);

	if (!ra) {
		free(rn);
		return -1;
	}
	free(j->d.name);
	free(j->d.address);
	j->d.name = rn;
	j->d.address = ra;
	if (!ynode_get(doc, "displayName") && strlen(rn) <= STACK_MAX_DISPLAY_NAME) {
		char *dn = strdup(rn);

		if (!dn)
			return -1;
		free(j->display_name);
		j->display_name = dn;
	}
	return 0;
}

/*
 * Run c of the sweep: its document with the combination's values, read as a
 * job into the next of the jobs with its problems moved to the loader's
 * (move_run_diags), then named. -1 ends the sweep (OOM, recorded).
 */
static int read_run(struct sweep_runs *R, size_t c)
{
	struct stack *st = R->st;
	struct loader *L = R->L;
	struct stack_kind_decls *js = stack_job_slot(st);
	struct stack_job_more *jm = js->more;
	struct stack_job *j = (struct stack_job *)js->items + js->n;
	struct vx_diags sub = VX_DIAGS_INIT, *diags = L->diags;
	struct policy_rules subv = { 0 }, *held = L->violations;
	const struct ynode *rd;
	char *rn;
	int rc, named;

	R->combo.len = 0;
	if (combo_name(&R->combo, R->m, c) < 0 || !(rn = vx_asprintf("%s[%s]", R->name, R->combo.data)))
		goto oom;
	rd = run_doc(&R->a, R->x, c, R->combo.data, R->doc);
	if (!rd) {
		free(rn);
		goto oom;
	}
	sub.cap = diags->cap;
	L->diags = &sub;
	L->violations = L->violations ? &subv : NULL;
	rc = stack_kinds_read_job(j, L, rd, st, R->env, NULL, NULL);
	L->diags = diags;
	L->violations = held;
	move_run_diags(L, &sub, R->doc, R->mkey, R->base_prefix, rn, &R->msgs);
	vx_diags_release(&sub);
	arena_clear(&R->a);
	js->n++;
	jm->sweeps[jm->nsweeps - 1].n++;
	if (rc == 0)
		j->sweep = jm->nsweeps;
	named = rc == 0 && j->d.name;
	/* run_name takes rn: j's name from now on, or freed on failure */
	if (named && run_name(j, R->doc, rn) < 0) {
		stack_oom(L);
		rn = NULL;
	}
	/* about the run, by the address it now has */
	if (held && rn)
		move_run_violations(L, &subv, R->doc, R->mkey, R->base_prefix, rn, j->d.address, &R->msgs);
	policy_rules_violations_release(&subv);
	if (!named)
		free(rn);
	return rc < 0 || L->rc ? -1 : 0;
oom:
	stack_oom(L);
	return -1;
}

int stack_sweep_read(struct stack *st, struct loader *L, const struct ynode *doc,
		     const struct spec_env *env, struct seen *seen, size_t *nseen, size_t spare)
{
	struct matrix m = { 0 };
	struct ectx x = { NULL, NULL, st, ynode_get(doc, "after") };
	struct vx_buf path = VX_BUF_INIT;
	const struct ynode *mkey = ynode_get_key(doc, "matrix"), *mn = ynode_get(doc, "matrix");
	struct stack_sweep *sw, *nsw;
	struct stack_job_more *jm;
	const char *name;
	char base_prefix[sizeof(L->prefix)];
	struct sweep_runs R = { .st = st, .L = L, .doc = doc, .mkey = mkey, .env = env, .m = &m, .x = &x, .base_prefix = base_prefix, .combo = VX_BUF_INIT };
	int ok;

	name = stack_read_name(L, doc, &kind_job);
	if (name && !stack_check_unique(L, seen, nseen, name, doc))
		name = NULL;
	R.name = name;
	snprintf(base_prefix, sizeof(base_prefix), "%s", L->prefix);
	jm = stack_job_more(st);
	nsw = jm ? realloc(jm->sweeps, (jm->nsweeps + 1) * sizeof(*nsw)) : NULL;
	if (!nsw)
		goto oom;
	jm->sweeps = nsw;
	sw = &jm->sweeps[jm->nsweeps];
	memset(sw, 0, sizeof(*sw));
	read_limit(L, doc, "maxParallel", &sw->max_parallel);
	read_limit(L, doc, "maxFailed", &sw->max_failed);
	ok = matrix_read(&m, L, mn);
	if (ok < 0)
		goto oom;
	if (!ok || !name)
		goto done;
	x.m = &m;
	if (vx_buf_adds(&path, "") < 0)
		goto oom;
	if (!check_exprs(L, &x, doc, &path, 0))
		goto done;
	if (strlen(name) + 2 + 60 * m.nkeys > 4096)
		goto done;
	if (sweep_record(&R, sw, spare) < 0)
		goto oom;
	for (size_t c = 0; c < m.ncombos && !L->rc; c++)
		if (read_run(&R, c) < 0)
			goto done;
	goto done;
oom:
	stack_oom(L);
done:
	for (size_t i = 0; i < R.msgs.n; i++)
		free(R.msgs.items[i]);
	free(R.msgs.items);
	arena_clear(&R.a);
	free(R.a.blocks);
	vx_buf_release(&path);
	vx_buf_release(&R.combo);
	matrix_release(&m);
	return L->rc ? -1 : 0;
}

/* ---------------------------------------------------------------------- */
/* Documents without a matrix that use ${{ jobs.NAME.* }}; after: */

static int has_expr(const struct ynode *n, size_t depth)
{
	if (depth > 64)
		return 0;
	if (n->kind == YNODE_SCALAR) {
		/* Every scalar of every job passes here, and most hold no '$' at all:
		 * memchr over the known length finds that fastest. (A scalar with a
		 * NUL byte was refused at load: its length is its strlen.) */
		const char *p = n->str, *end = n->str + n->len;

		while ((p = memchr(p, '$', (size_t)(end - p))) && end - p >= 3) {
			if (p[1] == '{' && p[2] == '{')
				return 1;
			p++;
		}
		return 0;
	}
	for (size_t i = 0; i < n->n; i++)
		if (has_expr(n->kind == YNODE_SEQ ? n->items[i] : n->pairs[i].value, depth + 1))
			return 1;
	return 0;
}

int stack_doc_has_expr(const struct ynode *doc)
{
	return has_expr(doc, 0);
}

int stack_expr_read(struct stack *st, struct loader *L, const struct ynode *doc,
		    const struct spec_env *env, struct seen *seen, size_t *nseen)
{
	struct ectx x = { NULL, NULL, st, ynode_get(doc, "after") };
	struct arena a = { 0 };
	struct vx_buf path = VX_BUF_INIT;
	const struct ynode *rd = subst(&a, &x, doc, 0);
	int rc = -1;

	if (!a.oom && vx_buf_adds(&path, "") == 0) {
		struct stack_kind_decls *js = stack_job_slot(st);

		rc = stack_kinds_read_job((struct stack_job *)js->items + js->n++, L, rd, st, env, seen, nseen);
		/* after the read: the message prefix names this job */
		if (rc == 0)
			(void)check_exprs(L, &x, doc, &path, 0);
	} else {
		stack_oom(L);
	}
	arena_clear(&a);
	free(a.blocks);
	vx_buf_release(&path);
	return rc;
}

/* "train" of "job.train" or "job.train[seed=1]"; 0 when item is not a job's address. */
static size_t after_base(const char *item, const char **name)
{
	const char *b;

	if (!(*name = kind_address_name(&kind_job, item)))
		return 0;
	b = strchr(*name, '[');
	if (b && (b == *name || item[strlen(item) - 1] != ']'))
		return 0;
	return b ? (size_t)(b - *name) : strlen(*name);
}

/* The document named name (nlen bytes), or n. */
static size_t doc_named(const struct ynode *const *docs, size_t n, const char *name, size_t nlen)
{
	for (size_t i = 0; i < n; i++) {
		const struct ynode *v = ynode_get(docs[i], "name");

		if (v && v->kind == YNODE_SCALAR && v->len == nlen && !strncmp(v->str, name, nlen))
			return i;
	}
	return n;
}

/* The i-th after: item of doc as a scalar, or NULL. */
static const struct ynode *after_item(const struct ynode *doc, size_t i)
{
	const struct ynode *a = ynode_get(doc, "after");

	return a && a->kind == YNODE_SEQ && i < a->n && a->items[i]->kind == YNODE_SCALAR ? a->items[i] : NULL;
}

static const char *name_of(const struct ynode *doc)
{
	const struct ynode *v = ynode_get(doc, "name");

	return v && v->kind == YNODE_SCALAR ? v->str : "";
}

static size_t after_count(const struct ynode *doc)
{
	const struct ynode *a = ynode_get(doc, "after");

	return a && a->kind == YNODE_SEQ ? a->n : 0;
}

/* Checks the shape of every after: item of docs, and that the job it names is declared. */
static void check_after_items(struct loader *L, const struct ynode *const *docs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t e = 0; e < after_count(docs[i]); e++) {
			const struct ynode *it = after_item(docs[i], e);
			const char *name;
			size_t len;

			if (!it) {
				stack_err_at(L, NULL, ynode_get(docs[i], "after")->items[e],
					     "CustomJob \"%s\": after[%zu]: expected a job's address (job.NAME)",
					     name_of(docs[i]), e);
				continue;
			}
			len = after_base(it->str, &name);
			if (!len)
				stack_err_at(L, NULL, it, "CustomJob \"%s\": after[%zu]: \"%.80s\" is not a job's address: "
					     "write job.NAME, or job.NAME[k=v,...] for a slice of a sweep",
					     name_of(docs[i]), e, it->str);
			else if (doc_named(docs, n, name, len) == n)
				stack_err_at(L, NULL, it, "CustomJob \"%s\": after[%zu]: no job \"%.*s\" is declared",
					     name_of(docs[i]), e, (int)len, name);
		}
	}
}

/* The first document docs[i]'s after: names that is not done yet, or n. */
static size_t first_waited(const struct ynode *const *docs, size_t n, const unsigned char *done,
			   size_t i)
{
	for (size_t e = 0; e < after_count(docs[i]); e++) {
		const struct ynode *it = after_item(docs[i], e);
		const char *name;
		size_t len = it ? after_base(it->str, &name) : 0, d;

		if (len && (d = doc_named(docs, n, name, len)) < n && !done[d])
			return d;
	}
	return n;
}

/*
 * docs[i], left undone by the ordering: follows its first unresolved
 * dependency until it comes back to i, and reports the cycle at i's after:.
 * A job that only waits for a cycle is not in it: the cycle's jobs are reported.
 */
static void report_cycle(struct loader *L, const struct ynode *const *docs, size_t n,
			 const unsigned char *done, size_t i)
{
	struct vx_buf path = VX_BUF_INIT;
	size_t cur = i, steps = 0;
	int cycle = 0;

	if (vx_buf_printf(&path, "%s.%s", kind_job.prefix, name_of(docs[i])) < 0)
		stack_oom(L);
	while (steps++ <= n) {
		size_t next = first_waited(docs, n, done, cur);

		if (next == n)
			break;
		if (vx_buf_printf(&path, " -> %s.%s", kind_job.prefix, name_of(docs[next])) < 0)
			stack_oom(L);
		if ((cycle = next == i))
			break;
		cur = next;
	}
	if (cycle)
		stack_err_at(L, NULL, ynode_get_key(docs[i], "after"), "CustomJob \"%s\": after: a cycle: "
								       "%s (each waits for the next); remove one of these after: entries",
			     name_of(docs[i]), path.data ? path.data : "");
	vx_buf_release(&path);
}

int stack_after_order(struct loader *L, const struct ynode *const *docs, size_t n, size_t *order)
{
	unsigned char *done = calloc(n + 1, 1);
	size_t k = 0;

	if (!done) {
		stack_oom(L);
		return -1;
	}
	L->prefix[0] = '\0'; /* each message names its job */
	check_after_items(L, docs, n);
	/* dependencies first; what is left is in a cycle */
	for (int progress = 1; progress;) {
		progress = 0;
		for (size_t i = 0; i < n; i++) {
			if (done[i] || first_waited(docs, n, done, i) < n)
				continue;
			done[i] = 1;
			order[k++] = i;
			progress = 1;
		}
	}
	for (size_t i = 0; i < n; i++)
		if (!done[i])
			report_cycle(L, docs, n, done, i);
	/* the jobs of a cycle last: they are read, their after: is refused above */
	for (size_t i = 0; i < n; i++)
		if (!done[i])
			order[k++] = i;
	free(done);
	return 0;
}

void stack_after_check(struct loader *L, const struct stack *st, const struct ynode *const *docs, size_t n)
{
	L->prefix[0] = '\0';
	for (size_t i = 0; i < n; i++)
		for (size_t e = 0; e < after_count(docs[i]); e++) {
			const struct ynode *it = after_item(docs[i], e);
			const char *name;
			int hit = 0;

			if (!it || !strchr(it->str, '[') || !after_base(it->str, &name))
				continue;
			for (size_t k = 0; !hit && k < stack_count(st, &kind_job); k++)
				hit = stack_jobs(st, NULL)[k].d.address && sweep_address_matches(it->str, stack_jobs(st, NULL)[k].d.address);
			if (!hit)
				stack_err_at(L, NULL, it, "CustomJob \"%s\": after[%zu]: \"%.80s\" names no run of "
					     "a sweep", name_of(docs[i]), e, it->str);
		}
}

/* Appends "ADDR\n" unless the lines of out since from hold it already. */
static int add_once(struct vx_buf *out, size_t from, const char *addr, size_t n)
{
	for (size_t at = from; at < out->len;) {
		const char *nl = memchr(out->data + at, '\n', out->len - at);
		size_t len = nl ? (size_t)(nl - (out->data + at)) : out->len - at;

		if (len == n && !memcmp(out->data + at, addr, n))
			return 0;
		at += len + 1;
	}
	if (vx_buf_add(out, addr, n) < 0 || vx_buf_addc(out, '\n') < 0)
		return VX_ENOMEM;
	return 0;
}

/* The axis-th "k=v" of run address a ("job.s[k=v,...]"): its start and length, or NULL. */
static const char *pair_at(const char *a, size_t axis, size_t *n)
{
	const char *p = strchr(a, '['), *end = a + strlen(a) - 1;

	if (!p || *end != ']')
		return NULL;
	for (p++; p < end; axis--) {
		const char *c = memchr(p, ',', (size_t)(end - p));

		*n = c ? (size_t)(c - p) : (size_t)(end - p);
		if (!axis)
			return p;
		p += *n + 1;
	}
	return NULL;
}

/* The sweep's address, then a slice for each value of each axis, axes and values in order. */
static int sweep_addresses(struct vx_buf *out, const struct stack *st, const struct stack_sweep *s)
{
	struct vx_buf slice = VX_BUF_INIT;
	size_t from;
	int rc = vx_buf_printf(out, "%s\n", s->address), more = 1;

	from = out->len;
	for (size_t axis = 0; more && rc == 0; axis++) {
		more = 0;
		for (size_t k = s->first; k < s->first + s->n && k < stack_count(st, &kind_job) && rc == 0; k++) {
			size_t n = 0;
			const char *p = pair_at(stack_jobs(st, NULL)[k].d.address, axis, &n);

			if (!p)
				continue;
			more = 1;
			vx_buf_reset(&slice);
			if (vx_buf_printf(&slice, "%s[%.*s]", s->address, (int)n, p) < 0)
				rc = VX_ENOMEM;
			else
				rc = add_once(out, from, slice.data, slice.len);
		}
	}
	vx_buf_release(&slice);
	return rc;
}

int sweep_stack_addresses(struct vx_buf *out, const struct stack *st)
{
	int rc = 0;

	/* Each kind's declarations, jobs first (the table in reverse); a job's sweeps after the
	 * jobs declared alone, and a sweep's runs ("job.s[k=v]") left out. */
	for (size_t k = kind_count; k-- > 0 && rc == 0;) {
		const struct kind *kind = kind_table[k];
		size_t n = kind_count_decls(kind, st);

		for (size_t i = 0; i < n && rc == 0; i++) {
			const struct stack_decl *d = kind_decl_at(kind, st, i);

			if (d && !strchr(d->address, '[') && vx_buf_printf(out, "%s\n", d->address) < 0)
				rc = VX_ENOMEM;
		}
		for (size_t i = 0; kind == &kind_job && i < stack_nsweeps(st) && rc == 0; i++)
			rc = sweep_addresses(out, st, &stack_sweeps(st, NULL)[i]);
	}
	return rc;
}
