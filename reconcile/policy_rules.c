/*
 * `kind: Policy` (policy_rules.h): its documents read by the stack loader,
 * the stack's merged with the repository's (a stack may only tighten), the
 * rules in force, and what is generic of holding them: a kind refused by
 * {allow: false}, and the rate rule over the kinds that price their
 * declarations. What a job may declare is the job kind's
 * (reconcile/kind_job_policy.c).
 */
#include "reconcile/policy_rules.h"
#include "reconcile/stack_loader.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reconcile/kind.h"
#include "reconcile/load/machines.h"
#include "reconcile/load/schema_tables.h"
#include "reconcile/load/spec.h"
#include "reconcile/load/ynode.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/digest.h"
#include "util/banned.h"

const struct kind policy_doc_kind = { .name = "Policy", .prefix = "policy" };

static const char *const job_rule_keys[POLICY_NJOB_RULES] = {
	"accelerators",
	"regions",
	"strategies",
	"maxGpusPerJob",
	"maxGpusActive",
	"maxHourlyUsd",
	"maxTimeout",
	"requireLabels",
};
static const char *const policy_keys[] = { "kind", "name", "rules" };

/*
 * The allow rules' keys: each distinct policy_allow of kind_table's rows,
 * jobs first (reverse phase order, as the docs list kinds). Returns how many.
 */
static size_t allow_keys(const char *keys[KIND_MAX])
{
	size_t n = 0;

	for (size_t k = kind_count; k-- > 0;) {
		const char *key = kind_table[k]->policy_allow;
		size_t i;

		if (!key)
			continue;
		for (i = 0; i < n && strcmp(keys[i], key); i++)
			;
		if (i == n)
			keys[n++] = key;
	}
	return n;
}

const char *policy_rule_key(size_t id)
{
	const char *keys[KIND_MAX];
	size_t n = allow_keys(keys);

	if (id < POLICY_NJOB_RULES)
		return job_rule_keys[id];
	return id - POLICY_NJOB_RULES < n ? keys[id - POLICY_NJOB_RULES] : NULL;
}

static size_t rule_count(void)
{
	const char *keys[KIND_MAX];

	return POLICY_NJOB_RULES + allow_keys(keys);
}

/* The id of a rule key, or POLICY_MAX_RULES. */
static size_t rule_id(const char *key)
{
	const char *k;

	for (size_t id = 0; (k = policy_rule_key(id)) != NULL; id++)
		if (!strcmp(k, key))
			return id;
	return POLICY_MAX_RULES;
}

int policy_rule_where(struct vx_buf *b, const struct policy_rules *p, size_t id)
{
	const struct policy_rule *r = p->in_force[id];

	return vx_buf_printf(b, "policy \"%s\" (rules.%s, %s:%u)", r->from->name, policy_rule_key(id),
			     r->from->file, r->line) < 0
		       ? VX_ENOMEM
		       : 0;
}

size_t policy_rules_count(const struct policy_rules *p)
{
	size_t n = 0;

	for (size_t id = 0; p && id < p->nrules; id++)
		n += p->in_force[id] != NULL;
	return n;
}

int policy_rules_summary(struct vx_buf *b, const struct policy_rules *p)
{
	const struct policy_doc *docs[2] = { p->repo, p->own };
	size_t n = policy_rules_count(p), k = 0;
	int rc = 0;

	for (size_t i = 0, first = 1; i < 2 && rc == 0; i++) {
		if (!docs[i])
			continue;
		rc = vx_buf_printf(b, "%s%s (%s)", first ? "" : ", ", docs[i]->name, docs[i]->file);
		first = 0;
	}
	if (rc == 0)
		rc = vx_buf_printf(b, ": %zu rule%s held", n, n == 1 ? "" : "s");
	for (size_t id = 0; id < p->nrules && rc == 0; id++)
		if (p->in_force[id])
			rc = vx_buf_printf(b, "%s%s", k++ ? ", " : ": ", policy_rule_key(id));
	return rc < 0 ? VX_ENOMEM : 0;
}

static void doc_free(struct policy_doc *d)
{
	if (!d)
		return;
	for (size_t id = 0; id < POLICY_MAX_RULES; id++) {
		for (size_t i = 0; i < d->rules[id].nwords; i++)
			free(d->rules[id].words[i]);
		free(d->rules[id].words);
	}
	free(d->name);
	free(d->file);
	free(d);
}

void policy_rules_free(struct policy_rules *p)
{
	if (!p)
		return;
	doc_free(p->repo);
	doc_free(p->own);
	free(p->root);
	for (size_t i = 0; i < p->nsites; i++) {
		free(p->sites[i].file);
		free(p->sites[i].prefix);
	}
	free(p->sites);
	policy_rules_violations_release(p);
	free(p);
}

void policy_rules_violations_release(struct policy_rules *p)
{
	for (size_t i = 0; i < p->nviolations; i++) {
		free(p->violations[i].file);
		free(p->violations[i].msg);
		free(p->violations[i].address);
	}
	free(p->violations);
	p->violations = NULL;
	p->nviolations = 0;
}

int policy_rules_add_violation(struct policy_rules *p, const char *file, unsigned line, unsigned col,
			       const char *address, const char *msg)
{
	struct policy_violation *v = realloc(p->violations, (p->nviolations + 1) * sizeof(*v));

	if (!v)
		return VX_ENOMEM;
	p->violations = v;
	v = &v[p->nviolations];
	memset(v, 0, sizeof(*v));
	v->file = file ? strdup(file) : NULL;
	v->msg = strdup(msg);
	v->address = address ? strdup(address) : NULL;
	v->line = line;
	v->col = col;
	if ((file && !v->file) || !v->msg || (address && !v->address)) {
		free(v->file);
		free(v->msg);
		free(v->address);
		return VX_ENOMEM;
	}
	p->nviolations++;
	return 0;
}

const struct policy_violation *policy_rules_violation_of(const struct policy_rules *p, const char *address)
{
	const struct policy_violation *wide = NULL;

	for (size_t i = 0; p && i < p->nviolations; i++) {
		if (!p->violations[i].address && !wide)
			wide = &p->violations[i];
		else if (p->violations[i].address && address && !strcmp(p->violations[i].address, address))
			return &p->violations[i];
	}
	return wide;
}

/* ---------------------------------------------------------------------- */
/* Reading a Policy document */

/* The words a list rule may hold (NULL: any well-formed word), *n of them. */
static const char *const *rule_words(size_t id, size_t *n)
{
	static const char *const strategies[] = { "STANDARD", "SPOT", "FLEX_START" };

	*n = 0;
	if (id == POLICY_ACCELERATORS) {
		/* every AcceleratorType but ACCELERATOR_TYPE_UNSPECIFIED, the first */
		*n = schema_enum_AcceleratorType.n - 1;
		return schema_enum_AcceleratorType.values + 1;
	}
	if (id == POLICY_STRATEGIES) {
		*n = sizeof(strategies) / sizeof(strategies[0]);
		return strategies;
	}
	return NULL;
}

/* One word of a list rule, checked as its rule wants; 1 when good. */
static int word_ok(struct loader *L, size_t id, const struct ynode *it, const char *path)
{
	size_t n;
	const char *const *words = rule_words(id, &n);

	if (!stack_is_string(it)) {
		stack_wrong_type(L, it, path, "string");
		return 0;
	}
	if (words) {
		for (size_t i = 0; i < n; i++)
			if (!strcmp(words[i], it->str))
				return 1;
		stack_unknown_word(L, it, path, "value", words, n);
		return 0;
	}
	if (id == POLICY_REGIONS && !stack_names_region_valid(it->str)) {
		stack_err(L, it, "%s: \"%s\" is not a region (like \"us-central1\")", path, it->str);
		return 0;
	}
	if (id == POLICY_REGIONS)
		return stack_regions_check(L, it, path, it->str, NULL) == 0;
	if (id == POLICY_REQUIRE_LABELS && !stack_names_label_key_valid(it->str)) {
		stack_err(L, it, "%s: \"%s\" is not a valid label key", path, it->str);
		return 0;
	}
	return 1;
}

/* A list rule: a sequence of words. -1 on OOM (recorded). */
static int read_list(struct loader *L, struct policy_rule *r, size_t id, const struct ynode *v)
{
	char path[64];

	if (v->kind != YNODE_SEQ) {
		snprintf(path, sizeof(path), "rules.%s", policy_rule_key(id));
		stack_wrong_type(L, v, path, "sequence");
		return 0;
	}
	r->words = calloc(v->n + 1, sizeof(*r->words));
	if (!r->words) {
		stack_oom(L);
		return -1;
	}
	for (size_t i = 0; i < v->n; i++) {
		snprintf(path, sizeof(path), "rules.%s[%zu]", policy_rule_key(id), i);
		if (!word_ok(L, id, v->items[i], path))
			continue;
		if (!(r->words[r->nwords++] = stack_dup_opt(L, v->items[i]->str)))
			return -1;
	}
	/* A list with a bad word is reported, and held to nothing more. */
	r->set = r->nwords == v->n;
	return 0;
}

/* A number rule: GPUs (an integer), USD per hour, or a timeout (a duration). */
static void read_num(struct loader *L, struct policy_rule *r, size_t id, const struct ynode *v)
{
	const char *t = stack_type_of(v);
	struct ynode_why why;
	char path[64], *end;
	int64_t x;

	snprintf(path, sizeof(path), "rules.%s", policy_rule_key(id));
	if (id == POLICY_MAX_TIMEOUT) {
		if (v->kind != YNODE_SCALAR || (strcmp(t, "string") && strcmp(t, "integer")))
			stack_wrong_type(L, v, path, "string");
		else if (spec_parse_duration(v->str, &x) < 0 || x <= 0)
			stack_err(L, v, "%s: \"%s\" is not a duration (like 72h, 30m, 7d)", path, v->str);
		else {
			r->num = (double)(x / 1000);
			r->set = 1;
		}
		return;
	}
	if (id == POLICY_MAX_HOURLY_USD) {
		if (v->kind != YNODE_SCALAR || (strcmp(t, "integer") && strcmp(t, "number")))
			stack_wrong_type(L, v, path, "number");
		else if ((r->num = strtod(v->str, &end)) < 0 || *end)
			stack_err(L, v, "%s: must be a number of US dollars, at least 0, got %s", path, v->str);
		else
			r->set = 1;
		return;
	}
	if (ynode_int(&x, &why, v, 0, 1000000) < 0)
		stack_err(L, v, "%s: %s", path, why.s);
	else {
		r->num = (double)x;
		r->set = 1;
	}
}

/* An allow rule: {allow: true|false}. */
static void read_allow(struct loader *L, struct policy_rule *r, size_t id, const struct ynode *v)
{
	static const char *const allow_keys_words[] = { "allow" };
	char path[64];
	int allow = 1;

	snprintf(path, sizeof(path), "rules.%s", policy_rule_key(id));
	if (v->kind != YNODE_MAP) {
		stack_wrong_type(L, v, path, "mapping");
		return;
	}
	stack_check_keys(L, v, path, allow_keys_words, 1);
	if (!stack_get_value(v, "allow"))
		stack_get_missing(L, v, path, "allow");
	else if (stack_get_bool(&allow, L, v, path, "allow")) {
		r->num = allow;
		r->set = 1;
	}
}

/* Each rule of rules into d. -1 on OOM (recorded). */
static int read_rules(struct loader *L, struct policy_doc *d, const struct ynode *rules)
{
	const char *keys[POLICY_MAX_RULES];
	size_t nkeys = rule_count();

	for (size_t id = 0; id < nkeys; id++)
		keys[id] = policy_rule_key(id);
	stack_check_keys(L, rules, "rules", keys, nkeys);
	for (size_t i = 0; i < rules->n; i++) {
		const struct ynode *k = rules->pairs[i].key, *v = rules->pairs[i].value;
		size_t id = rule_id(k->str);
		struct policy_rule *r;

		if (id >= POLICY_MAX_RULES || !stack_get_value(rules, k->str))
			continue;
		/* set once its value is read right: a bad one is reported, not held to */
		r = &d->rules[id];
		r->line = k->line;
		r->col = k->col;
		r->from = d;
		if (id == POLICY_ACCELERATORS || id == POLICY_REGIONS || id == POLICY_STRATEGIES ||
		    id == POLICY_REQUIRE_LABELS) {
			if (read_list(L, r, id, v) < 0)
				return -1;
		} else if (id < POLICY_NJOB_RULES) {
			read_num(L, r, id, v);
		} else {
			read_allow(L, r, id, v);
		}
	}
	return 0;
}

/* One Policy document into a new *out (NULL when its name is bad). -1 on OOM (recorded). */
static int read_doc(struct loader *L, struct policy_doc **out, const struct ynode *doc, const char *file,
		    int repo)
{
	const struct ynode *rules;
	const char *name = stack_read_name(L, doc, &policy_doc_kind);
	struct policy_doc *d;

	*out = NULL;
	stack_check_keys(L, doc, "", policy_keys, sizeof(policy_keys) / sizeof(policy_keys[0]));
	rules = stack_get_map(L, doc, "rules", "rules");
	if (!rules && !stack_get_value(doc, "rules"))
		stack_get_missing(L, doc, "", "rules");
	if (!name)
		return 0;
	d = calloc(1, sizeof(*d));
	if (!d || !(d->name = strdup(name)) || !(d->file = strdup(file))) {
		doc_free(d);
		stack_oom(L);
		return -1;
	}
	d->repo = repo;
	d->line = doc->line;
	d->col = doc->col;
	*out = d;
	return rules ? read_rules(L, d, rules) : 0;
}

/* st->policy, made when first needed. NULL on OOM (recorded). */
static struct policy_rules *rules_of(struct loader *L, struct stack *st)
{
	if (!st->policy && !(st->policy = calloc(1, sizeof(*st->policy))))
		stack_oom(L);
	if (st->policy)
		st->policy->nrules = rule_count();
	return st->policy;
}

/*
 * The name diagnostics give the repository's policy file: relative to the
 * working directory when under it, else absolute. Caller frees.
 */
static char *repo_file_name(const char *root)
{
	char cwd[PATH_MAX];
	size_t n;

	if (getcwd(cwd, sizeof(cwd))) {
		n = strlen(cwd);
		if (!strcmp(cwd, root))
			return vx_strdup(POLICY_REPO_FILE);
		if (!strncmp(root, cwd, n) && root[n] == '/')
			return vx_asprintf("%s/%s", root + n + 1, POLICY_REPO_FILE);
	}
	return vx_asprintf("%s/%s", root, POLICY_REPO_FILE);
}

/* The one Policy document of the repository's file into st->policy->repo. */
static int read_repo_docs(struct load_pass *B, const struct yfile *yf)
{
	struct loader *L = B->L;
	size_t found = 0, before = L->nerr;

	for (size_t i = 0; i < yf->ndocs; i++) {
		const struct ynode *doc = yf->docs[i], *k;

		if (!doc)
			continue;
		L->prefix[0] = '\0';
		k = doc->kind == YNODE_MAP ? stack_get_value(doc, "kind") : NULL;
		if (!k || !stack_is_string(k) || strcmp(k->str, policy_doc_kind.name)) {
			stack_err(L, k ? k : doc, "the repository's policy file holds one \"kind: Policy\" "
						  "document and nothing else");
			continue;
		}
		if (found++) {
			stack_err(L, doc, "a second Policy: the repository's policy file holds one");
			continue;
		}
		if (!rules_of(L, B->st) || read_doc(L, &B->st->policy->repo, doc, yf->path, 1) < 0)
			return -1;
	}
	if (!found && L->nerr == before) {
		L->nerr++;
		if (vx_diags_add(L->diags, yf->path, 1, 1, "no \"kind: Policy\" document in the repository's "
							   "policy file") < 0)
			stack_oom(L);
	}
	return L->rc ? -1 : 0;
}

/* The repository's file once parsed (rc: ynode_load_*'s), with its work tree root (NULL: a commit's). */
static int read_repo_yfile(struct load_pass *B, int rc, struct yfile *yf, const char *root)
{
	if (rc == VX_EINVAL) {
		B->L->nerr++;
		return 0;
	}
	if (rc < 0) {
		if (!B->L->rc)
			B->L->rc = rc;
		return -1;
	}
	rc = read_repo_docs(B, yf);
	yfile_free(yf);
	if (rc == 0 && root && B->st->policy && B->st->policy->repo && !(B->st->policy->root = strdup(root))) {
		stack_oom(B->L);
		rc = -1;
	}
	return rc;
}

int policy_rules_read_repo(struct load_pass *B, const char *root)
{
	struct stat sb = { 0 };
	struct yfile *yf = NULL;
	char *file;
	int rc;

	if (B->policy_src) {
		rc = ynode_load_mem(&yf, B->policy_src->name, B->policy_src->data, B->policy_src->len, NULL,
				    B->L->diags, B->L->err);
		return read_repo_yfile(B, rc, yf, NULL);
	}
	if (!root)
		return 0;
	if (!(file = repo_file_name(root))) {
		stack_oom(B->L);
		return -1;
	}
	if (lstat(file, &sb) < 0 && errno == ENOENT) {
		free(file);
		return 0;
	}
	/* As a stack file (reconcile/stack.c's confine): git versions the link, not what it names. */
	if (S_ISLNK(sb.st_mode)) {
		B->L->nerr++;
		rc = vx_diags_add(B->L->diags, file, 1, 1, "the repository's policy file is a symbolic link: git "
							   "versions the link, not the file it names; copy the file into the repository");
		free(file);
		if (rc < 0)
			stack_oom(B->L);
		return rc < 0 ? -1 : 0;
	}
	rc = ynode_load_file(&yf, file, NULL, B->L->diags, B->L->err);
	free(file);
	return read_repo_yfile(B, rc, yf, root);
}

/* ---------------------------------------------------------------------- */
/* A stack's Policy may only tighten the repository's */

const char *policy_num_text(char out[32], size_t id, double num)
{
	static const struct {
		int64_t s;
		const char *unit;
	} units[] = {
		{ 3600, "h" },
		{ 60, "m" },
		{ 1, "s" },
	};
	int64_t secs = (int64_t)num;

	if (id != POLICY_MAX_TIMEOUT) {
		snprintf(out, 32, "%g", num);
		return out;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (secs % units[i].s == 0) {
			snprintf(out, 32, "%lld%s", (long long)(secs / units[i].s), units[i].unit);
			break;
		}
	return out;
}

static int has_word(const struct policy_rule *r, const char *w)
{
	for (size_t i = 0; i < r->nwords; i++)
		if (!strcmp(r->words[i], w))
			return 1;
	return 0;
}

/* "the repository's policy \"N\" (rules.KEY, FILE:LINE)" for the loosening messages. */
static const char *repo_where(struct vx_buf *b, const struct policy_doc *repo, size_t id)
{
	vx_buf_reset(b);
	if (vx_buf_printf(b, "the repository's policy \"%s\" (rules.%s, %s:%u)", repo->name,
			  policy_rule_key(id), repo->file, repo->rules[id].line) < 0)
		return "the repository's policy";
	return vx_buf_str(b);
}

/* A list rule of the stack's Policy that names a word the repository's does not allow. */
static void tighter_list(struct loader *L, const struct policy_doc *repo, size_t id, const struct policy_rule *own,
			 const struct ynode *v, struct vx_buf *b)
{
	const struct policy_rule *r = &repo->rules[id];

	for (size_t i = 0; v->kind == YNODE_SEQ && i < v->n; i++) {
		const struct ynode *it = v->items[i];

		if (!stack_is_string(it) || !has_word(own, it->str) || has_word(r, it->str))
			continue;
		stack_err(L, it, "rules.%s[%zu]: %s is not allowed by %s: a stack's Policy may only tighten it",
			  policy_rule_key(id), i, it->str, repo_where(b, repo, id));
	}
}

/* Each rule of own the repository's policy also writes, no looser than it. */
static void check_tighter(struct loader *L, const struct policy_doc *repo, const struct policy_doc *own,
			  const struct ynode *doc)
{
	const struct ynode *rules = ynode_get(doc, "rules");
	struct vx_buf b = VX_BUF_INIT;
	size_t n = rule_count();
	char num[32], num2[32];

	for (size_t id = 0; id < n && rules && rules->kind == YNODE_MAP; id++) {
		const struct policy_rule *o = &own->rules[id], *r = &repo->rules[id];
		const struct ynode *v = ynode_get(rules, policy_rule_key(id));

		if (!o->set || !r->set || !v)
			continue;
		if (o->words || r->words)
			tighter_list(L, repo, id, o, v, &b);
		else if (id >= POLICY_NJOB_RULES && o->num > r->num)
			stack_err(L, v, "rules.%s: allow: true, but %s says allow: false: a stack's Policy may "
					"only tighten it",
				  policy_rule_key(id), repo_where(&b, repo, id));
		else if (id < POLICY_NJOB_RULES && o->num > r->num)
			stack_err(L, v, "rules.%s: %s is more than %s allows (%s): a stack's Policy may only "
					"tighten it",
				  policy_rule_key(id), policy_num_text(num, id, o->num),
				  repo_where(&b, repo, id), policy_num_text(num2, id, r->num));
	}
	vx_buf_release(&b);
}

int policy_rules_load_read(struct load_pass *B, const struct ynode *doc)
{
	struct loader *L = B->L;
	struct policy_rules *p = rules_of(L, B->st);

	if (!p)
		return -1;
	if (p->own) {
		L->prefix[0] = '\0';
		stack_err(L, doc, "a second Policy: this stack's Policy is declared at %s:%u:%u (one Policy per "
				  "stack)",
			  p->own->file, p->own->line, p->own->col);
		return 0;
	}
	if (read_doc(L, &p->own, doc, doc->file, 0) < 0)
		return -1;
	if (p->own && p->repo)
		check_tighter(L, p->repo, p->own, doc);
	return L->rc ? -1 : 0;
}

/* ",\"KEY\":..." of rule id of d, for its canonical form. */
static int canonical_rule(struct vx_buf *b, const struct policy_doc *d, size_t id)
{
	const struct policy_rule *r = &d->rules[id];
	int rc = vx_buf_printf(b, ",\"%s\":", policy_rule_key(id));

	if (rc == 0 && !r->words)
		return vx_buf_printf(b, "%.17g", r->num);
	rc = rc ? rc : vx_buf_addc(b, '[');
	for (size_t i = 0; i < r->nwords && rc == 0; i++) {
		rc = i ? vx_buf_addc(b, ',') : 0;
		rc = rc ? rc : vx_buf_add_json_str(b, r->words[i]);
	}
	return rc ? rc : vx_buf_addc(b, ']');
}

/* d->hash: the SHA-256 of {"name":...,"repo":...,"rules":{...}} (rules in id order). */
static int hash_doc(struct policy_doc *d, size_t nrules)
{
	struct vx_buf b = VX_BUF_INIT;
	int rc = vx_buf_adds(&b, "{\"name\":");

	rc = rc ? rc : vx_buf_add_json_str(&b, d->name);
	rc = rc ? rc : vx_buf_printf(&b, ",\"repo\":%s,\"rules\":{\"_\":0", d->repo ? "true" : "false");
	for (size_t id = 0; id < nrules && rc == 0; id++)
		if (d->rules[id].set)
			rc = canonical_rule(&b, d, id);
	rc = rc ? rc : vx_buf_adds(&b, "}}");
	rc = rc ? rc : vx_digest_sha256_hex(d->hash, b.data, b.len);
	vx_buf_release(&b);
	return rc;
}

/* The rules in force: the stack's where it writes one, else the repository's. */
void policy_rules_load_finish(struct load_pass *B)
{
	struct policy_rules *p = B->st->policy;

	if (!p)
		return;
	for (size_t id = 0; id < p->nrules; id++) {
		if (p->own && p->own->rules[id].set)
			p->in_force[id] = &p->own->rules[id];
		else if (p->repo && p->repo->rules[id].set)
			p->in_force[id] = &p->repo->rules[id];
	}
	if ((p->repo && hash_doc(p->repo, p->nrules) < 0) || (p->own && hash_doc(p->own, p->nrules) < 0))
		stack_oom(B->L);
}

int policy_rules_hash_line(struct vx_buf *b, const struct policy_rules *p)
{
	int rc = 0;

	if (p && p->repo)
		rc = vx_buf_printf(b, "policy.repository %s\n", p->repo->hash);
	if (rc == 0 && p && p->own)
		rc = vx_buf_printf(b, "policy.%s %s\n", p->own->name, p->own->hash);
	return rc < 0 ? VX_ENOMEM : 0;
}

/* ---------------------------------------------------------------------- */
/* Holding the rules */

void policy_rules_check_kinds(struct loader *L, const struct stack *st)
{
	const struct policy_rules *p = st->policy;
	struct vx_buf b = VX_BUF_INIT;

	for (size_t k = 0; p && k < kind_count; k++) {
		const struct kind *kd = kind_table[k];
		size_t id = kd->policy_allow ? rule_id(kd->policy_allow) : POLICY_MAX_RULES;

		if (id >= POLICY_MAX_RULES || !p->in_force[id] || p->in_force[id]->num)
			continue;
		for (size_t i = 0; i < kind_count_decls(kd, st); i++) {
			const struct stack_decl *d = kind_decl_at(kd, st, i);

			if (!d || !d->name || !d->file)
				continue;
			vx_buf_reset(&b);
			if (policy_rule_where(&b, p, id) < 0) {
				stack_oom(L);
				break;
			}
			snprintf(L->prefix, sizeof(L->prefix), "%s \"%.100s\": ", kd->name, d->name);
			L->about = d->address;
			stack_violation(L, d->file, d->line, d->col, "not allowed by %s: it allows no declared %s",
					vx_buf_str(&b), kd->noun_plural);
			L->about = NULL;
		}
	}
	vx_buf_release(&b);
}

int policy_rules_add_rate_site(struct loader *L, struct stack *st, const struct ynode *at, const char *prefix,
			       size_t job, size_t rung)
{
	struct policy_rules *p = st->policy;
	struct policy_rate_site *s;

	if (!p || !p->in_force[POLICY_MAX_HOURLY_USD])
		return 0;
	/* grown by doubling: a sweep adds a site per run */
	if (VX_ALLOC_GROW(p->sites, p->nsites + 1, p->asites) < 0) {
		stack_oom(L);
		return -1;
	}
	s = &p->sites[p->nsites];
	memset(s, 0, sizeof(*s));
	s->file = strdup(at->file);
	s->prefix = strdup(prefix);
	if (!s->file || !s->prefix) {
		free(s->file);
		free(s->prefix);
		stack_oom(L);
		return -1;
	}
	s->line = at->line;
	s->col = at->col;
	s->job = job;
	s->rung = rung;
	p->nsites++;
	return 0;
}
