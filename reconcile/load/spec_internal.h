#ifndef VX_RECONCILE_SPEC_INTERNAL_H
#define VX_RECONCILE_SPEC_INTERNAL_H

/*
 * What the CustomJobSpec checker's files share and nothing else uses:
 * spec.c (the entry points, durations, the checker's error reporting),
 * spec_walk.c (the schema walker), spec_machine.c (the machine and
 * scheduling rules), spec_json.c (the output tree, canonical JSON, redaction
 * and hash) and spec_diff.c. Not part of spec.h's public surface.
 */

#include <stddef.h>
#include <stdint.h>

#include "reconcile/load/spec.h"
#include "reconcile/load/ynode.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/err.h"

/* ---- the output tree, canonical JSON, redaction (spec_json.c) ---- */

enum jv_kind { JV_OBJ = 1, JV_ARR, JV_STR, JV_NUM, JV_BOOL };

struct jv;
struct jv_member {
	const char *key; /* NULL in arrays */
	char *owned;	 /* key when jv_add copied it (freed with the tree), else NULL */
	struct jv *v;
};

struct jv {
	enum jv_kind kind;
	char *str;     /* JV_STR value, JV_NUM text: in the node's own allocation */
	int b;         /* JV_BOOL */
	int sensitive; /* JV_STR: replaced by its hash in redacted output */
	struct jv_member *m;
	size_t n, alloc;
};

/*
 * How spec_json_write writes a sensitive value. NULL: as it is (the canonical
 * JSON sent to Vertex). Otherwise as "hmac-sha256:<hex>" keyed with key, or, while
 * key is NULL (the state and so its salt are not loaded yet), as a fixed
 * placeholder: a hash over it is no oracle, and a bug that stores it shows.
 */
struct redact {
	const unsigned char *key;
	size_t keylen;
};

void jv_free(struct jv *v);
/* A new node (str copied when not NULL); NULL when out of memory. */
struct jv *jv_new(enum jv_kind kind, const char *str);
/* Adds child (taking it, also on failure) under a copy of key (NULL in arrays). */
int jv_add(struct jv *parent, const char *key, struct jv *child) VX_WUR;
/* The same with key borrowed: it must outlive the tree (a schema table's name, a literal). */
int jv_add_static(struct jv *parent, const char *key, struct jv *child) VX_WUR;
struct jv *jv_get(const struct jv *obj, const char *key);
/* Sorts every object's members by key, recursively (the canonical order). */
void jv_sort(struct jv *v);
size_t jv_count_sensitive(const struct jv *v);
/* Appends v's JSON to b, sensitive values as redact says (NULL: as they are). */
int spec_json_write(struct vx_buf *b, const struct jv *v, const struct redact *redact) VX_WUR;
/* Renders tree into out->redacted_json with r, and hashes that into out->hash. */
int spec_json_redact_and_hash(struct job_spec *out, const struct jv *tree,
			      const struct redact *r) VX_WUR;

/* ---- the checker's context ---- */

struct pool_info {
	const struct ynode *node;       /* the pool's map */
	const struct ynode *mspec;      /* machineSpec map */
	const char *machine_type;
	const struct ynode *mt_node;
	const char *accel;              /* canonical enum name, borrowed from the tables */
	const struct ynode *acc_node;
	int64_t count;
	const struct ynode *cnt_node;
	int64_t replicas;               /* meaningful only when rep_node is set */
	const struct ynode *rep_node;   /* replicaCount as written, NULL when not given */
	int has_task;
	int mspec_bad;                  /* machineSpec had schema errors: skip its rules */
	const struct spec_reservation *res; /* named reservation, if any */
	const struct ynode *res_node;
	/* machineSpec.reservationAffinity when it asks for a reservation (vx's
	 * {reservation: NAME}, or any type but NO_RESERVATION), else NULL. */
	const struct ynode *affinity_node;
};

struct chk {
	struct vx_diags *diags;
	const struct spec_env *env;
	struct job_spec *out;
	struct vx_buf path;
	int nerr;
	int oom;
	struct pool_info *pool;         /* the pool being checked, or NULL */
	struct pool_info *pools;        /* every pool, for the job-level rules */
	size_t npools;
	const char *strategy;           /* enum name, or NULL */
	const struct ynode *strategy_node;
	int64_t timeout_ms, max_wait_ms;
	const struct ynode *timeout_node;
	const char *output_uri;
	const char *held_ref; /* a kind's job_ref_field (persistentResourceId), or NULL */
};

/* ---- spec.c: the checker's error reporting ---- */

/* An error at node n about the field at the current path. */
VX_PRINTF(3, 4)
void spec_err(struct chk *c, const struct ynode *n, const char *fmt, ...);
/* An error at node n with an explicit path. */
VX_PRINTF(4, 5)
void spec_err_at(struct chk *c, const struct ynode *n, const char *path, const char *fmt, ...);

/* ---- spec_walk.c: the schema walker ---- */

/* Checks n as message msgid of the schema tables into *out, reporting the
 * problems through c. */
int spec_walk_message(struct chk *c, int msgid, const struct ynode *n, struct jv **out);

/* ---- spec_machine.c: the machine and scheduling rules ---- */

/* The machine rules of pool idx (p, whose machineType is set and checked). */
void spec_machine_check_pool(struct chk *c, size_t idx, struct pool_info *p);
/* The job-level rules of scheduling.strategy (FLEX_START). */
void spec_machine_check_strategy(struct chk *c);

#endif
