#ifndef VX_RECONCILE_STACK_LOADER_H
#define VX_RECONCILE_STACK_LOADER_H

/*
 * What the stack loader's files share and nothing else uses: stack.c (the
 * context, its error reporting, names and duplicates, labels, the passes,
 * hashes and lookups), stack_names.c (name, label and branch rules),
 * stack_get.c (typed YAML getters), stack_kinds.c (the Stack document) and
 * each kind's reader (its load_* slots of struct kind, in its kind files).
 * It names no kind. Not part of stack.h's public surface.
 */

#include <stddef.h>
#include <stdint.h>

#include "reconcile/load/spec.h"
#include "reconcile/stack.h"
#include "reconcile/load/ynode.h"
#include "util/diag.h"
#include "util/err.h"
#include "util/hashmap.h"

struct vx_buf;

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Vertex allows 64 labels on a job; vx adds seven of its own (runlabel.h RUNLABEL_N). */
#define STACK_MAX_USER_LABELS 57

struct kind;
/* The Stack document's kind for the loader (stack.c); the others are kind_table's. */
extern const struct kind stack_doc_kind;

/* Indexed by enum stack_on_change - 1 and enum stack_backend - 1. */
extern const char *const stack_on_change_names[3];
extern const char *const stack_backend_names[3];

/*
 * The names declared so far in one name space: an open-addressing hash
 * table (so checking N names is linear, not quadratic), emptied when a
 * pass starts again with *nseen = 0 (stack_check_unique).
 */
struct seen {
	struct vx_hashmap names; /* name (borrowed from the YAML tree) -> index into at */
	const struct ynode **at; /* where each name was declared */
	size_t n, alloc;
};

struct loader {
	struct vx_diags *diags;
	struct vx_err *err;
	int rc;             /* first hard failure (VX_ENOMEM), 0 otherwise */
	size_t nerr;        /* diagnostics added (dropped ones included) */
	int stack_region;   /* the Stack document writes a region (valid or not) */
	int unparsed;       /* some file did not parse (so a missing Stack may be in it) */
	char prefix[160];   /* "CustomJob \"a\": " for the document being read */
	/* Where warnings go (the stack's own list); NULL: dropped (stack_peek). */
	struct vx_diags *warnings;
	/* Where policy violations go (stack_violation), kept apart from the
	 * errors so that a lenient load keeps them (reconcile/policy_rules.h);
	 * NULL: they are errors like any other. */
	struct policy_rules *violations;
	/* The address the violations found now are about ("job.a"), NULL: the stack. */
	const char *about;
	/* The rung of its fallback ladder they are about (k + 1 for resubmit.fallback[k]); 0: the
	 * declaration itself, which every rung runs (policy_violation.rung). */
	int64_t about_rung;
};

/* ---- stack.c: the context and its error reporting ---- */

/* Records the first allocation failure in L->rc. */
void stack_oom(struct loader *L);
/* Adds "<prefix><message>" at node at's position (or the file alone when at is NULL). */
VX_PRINTF(4, 5)
void stack_err_at(struct loader *L, const char *file, const struct ynode *at, const char *fmt, ...);
#define stack_err(L, at, ...) stack_err_at((L), NULL, (at), __VA_ARGS__)
/*
 * A policy violation: "<prefix><message>" at file:line:col, about L->about.
 * An error of the stack unless the load is lenient and finds no other.
 */
VX_PRINTF(5, 6)
void stack_violation(struct loader *L, const char *file, unsigned line, unsigned col, const char *fmt, ...);
/* A warning at node at: shown, never a reason to refuse the stack (L->warnings). */
VX_PRINTF(3, 4)
void stack_warn(struct loader *L, const struct ynode *at, const char *fmt, ...);
/* "unknown value "x" (did you mean "y"?)" or "unknown value "x" (one of a, b)". */
void stack_unknown_word(struct loader *L, const struct ynode *at, const char *path,
			const char *what, const char *const *words, size_t n);
/* Reports every key of map not in keys. path is "" at the top of a document. */
void stack_check_keys(struct loader *L, const struct ynode *map, const char *path,
		      const char *const *keys, size_t n);
/* The YAML type of n as the messages name it ("value" when unknown). */
const char *stack_type_of(const struct ynode *n);
/* Reports that at (named path) is not a want ("string", "mapping", ...). */
void stack_wrong_type(struct loader *L, const struct ynode *at, const char *path,
		      const char *want);
/* Whether n is a scalar YAML types as a string. */
int stack_is_string(const struct ynode *n);

/* ---- stack.c: labels ---- */

void stack_labels_release(struct stack_labels *l);
/* Sets key to value (copies), replacing an existing entry; keeps the order sorted. */
int stack_labels_set(struct stack_labels *l, const char *key, const char *value) VX_WUR;

/* ---- stack.c: names and duplicates ---- */

/* Reads `name` with the rule of its kind; sets the message prefix. NULL when not valid. */
const char *stack_read_name(struct loader *L, const struct ynode *doc, const struct kind *kind);
/* 1 when name is new (recorded), 0 when a duplicate (reported). */
int stack_check_unique(struct loader *L, struct seen *seen, size_t *nseen, const char *name,
		       const struct ynode *doc);
/* d's name, address "prefix.name" and position; -1 on allocation failure (recorded). */
int stack_decl_init(struct stack_decl *d, struct loader *L, const char *prefix, const char *name,
		    const struct ynode *doc) VX_WUR;
void stack_decl_release(struct stack_decl *d);
/* strdup of an optional borrowed string, recording OOM. */
char *stack_dup_opt(struct loader *L, const char *s);

/* ---- stack_names.c: character rules (1 when valid) ---- */

/* Compute Engine resource names (RFC 1035): [a-z]([-a-z0-9]*[a-z0-9])?, at most 63. */
int stack_names_rfc1035_valid(const char *s);
int stack_names_label_key_valid(const char *s);
int stack_names_label_value_valid(const char *s);
/* A region name: us-central1, europe-west4, northamerica-northeast1. */
int stack_names_region_valid(const char *s);
/* A zone: a region and "-" and a letter: us-central1-a. */
int stack_names_zone_valid(const char *s);
/* A project ID, optionally domain-scoped ("example.com:my-project"). */
int stack_names_project_valid(const char *s);
/* A branch name by git's rules (git-check-ref-format(1), plus git branch's own). */
int stack_names_branch_valid(const char *s);
/* A Cloud Quotas quota ID: letters, digits, "-" and "_", not empty. */
int stack_names_quota_id_valid(const char *s);
int stack_names_email_valid(const char *s);
/* Number of UTF-8 code points (the input is valid UTF-8). */
size_t stack_names_utf8_len(const char *s);

/* ---- stack_regions.c: regions vx knows ---- */

/*
 * Checks a well-formed region name against the regions vx knows (the
 * built-in price table's): 0 when known or plausibly new (a warning), -1
 * when surely a typo of a known one (an error with the nearest). field names
 * the value in messages ("region", "zone"); zone_letter, when the region is
 * a zone's, is the zone's letter ("a"), for the suggestion.
 */
int stack_regions_check(struct loader *L, const struct ynode *at, const char *field,
			const char *region, const char *zone_letter);

/* ---- stack_get.c: typed YAML getters ---- */

/*
 * Each reads map's key ("path.key" in messages, "key" when path is ""): 1
 * with *out set when present and of the type; 0 when absent (reported if
 * required) or wrong (reported). *node (when node is not NULL) is the value,
 * NULL when absent.
 */
int stack_get_str(const char **out, const struct ynode **node, struct loader *L,
		  const struct ynode *map, const char *path, const char *key, int required);
int stack_get_int(int64_t *out, const struct ynode **node, struct loader *L,
		  const struct ynode *map, const char *path, const char *key, int required);
int stack_get_bool(int *out, struct loader *L, const struct ynode *map, const char *path,
		   const char *key);
/* An enum field: *out = 1 + index into words. */
int stack_get_enum(int *out, struct loader *L, const struct ynode *map, const char *key,
		   const char *const *words, size_t n);
/* The value node for key when present and not null, else NULL. */
const struct ynode *stack_get_value(const struct ynode *map, const char *key);
/* Reports that map's required key is missing (or written null). */
void stack_get_missing(struct loader *L, const struct ynode *map, const char *path,
		       const char *key);
/* A map that must be a mapping node (reported otherwise); NULL when absent. */
const struct ynode *stack_get_map(struct loader *L, const struct ynode *map, const char *key,
				  const char *path);
/* A map of strings into out: labels (with the label rules) or dimensions. */
void stack_get_string_map(struct stack_labels *out, struct loader *L, const struct ynode *map,
			  const char *key, int labels);

/* ---- stack_kinds.c: the Stack document ---- */

void stack_kinds_read_stack(struct stack *st, struct loader *L, const struct ynode *doc);
/*
 * The optional region of a Stack or a declaration: 1 when present as a
 * string, with *out its copy (left alone when not a region: reported); 0
 * otherwise. *node is the value (NULL when absent).
 */
int stack_get_region(struct loader *L, const struct ynode *doc, const struct ynode **node,
		     char **out);
/* stack_notify.c: the Stack's notify: targets into st->notify. */
void stack_notify_read(struct stack *st, struct loader *L, const struct ynode *doc);
void stack_notify_release(struct stack *st);
/* Appends ",\"notify\":[...]" to the Stack's canonical form when it has targets. */
int stack_notify_canonical(struct vx_buf *b, const struct stack *st) VX_WUR;
/* stack_budget.c: the Stack's budget: into st->budget. */
void stack_budget_read(struct stack *st, struct loader *L, const struct ynode *doc);
/* Appends ",\"budget\":{...}" to the Stack's canonical form when it has one. */
int stack_budget_canonical(struct vx_buf *b, const struct stack *st) VX_WUR;
/*
 * An amount of US dollars (maxHourlyUsd: 40, usd: 20000.50): a plain number
 * above 0 and at most 1e9, with at most two decimals. 1 with *out set when
 * present and valid; 0 when absent or wrong (reported).
 */
int stack_get_usd(double *out, const struct ynode **node, struct loader *L, const struct ynode *map,
		  const char *path, const char *key);

/* ---- stack.c: the passes a kind's load_* slots run in (struct kind) ---- */

/*
 * What the passes share while they read one stack: the documents of the
 * pass being run (in the order to read them), the names seen in its name
 * space, and what a later pass needs of an earlier one.
 */
struct load_pass {
	struct loader *L;
	struct stack *st;
	/* The names seen in this pass's name space (nseen is 0 at each pass). */
	struct seen *seen;
	size_t nseen;
	/* This pass's documents in file order, and the order to read them in
	 * (indexes into docs). */
	const struct ynode **docs;
	size_t *order;
	size_t ndocs;
	const struct ynode *first_stack;
	/* What job specs may name (spec_env.reservations): filled by the pass
	 * that declares them, owned here (freed with the passes). */
	struct spec_reservation *sres;
	size_t nsres;
	struct spec_env env;
	/* The repository whose .vx/policy.yaml binds the stack, or NULL (reconcile/policy_rules.h);
	 * or that file's text itself (stack_load_mem_policy), or NULL. */
	const char *policy_root;
	const struct stack_source *policy_src;
};

/* ---- stack.c: canonical forms (a kind's decl_hash) ---- */

/* ,"key":"value" (null when value is NULL) */
int stack_json_kv(struct vx_buf *b, const char *key, const char *value) VX_WUR;
/* ,"key":{"k":"v",...} */
int stack_json_map(struct vx_buf *b, const char *key, const struct stack_labels *l) VX_WUR;
/* Closes b's canonical form, hashes it into d->hash and resets b. Keys are written in sorted order. */
int stack_decl_hash(struct vx_buf *b, struct stack_decl *d) VX_WUR;

#endif
