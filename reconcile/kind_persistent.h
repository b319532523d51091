#ifndef VX_RECONCILE_KIND_PERSISTENT_H
#define VX_RECONCILE_KIND_PERSISTENT_H

/*
 * The persistent resource kind's declarations (PersistentResource documents,
 * persistent_resource.NAME, NAME the persistentResourceId) and their
 * accessors, for the kind's files. They live in the kind's slot of struct
 * stack.
 */

#include <stddef.h>
#include <stdint.h>

#include "reconcile/stack.h"

/* One of spec.resourcePools, as declared. */
struct stack_persistent_pool {
	char *id;
	char *machine_type;	   /* machineSpec.machineType */
	char *accelerator_type;	   /* machineSpec.acceleratorType, Vertex's name ("NVIDIA_L4"), or NULL */
	int64_t accelerator_count; /* per machine; 0 with none */
	int64_t replica_count;	   /* >= 1 */
	int has_autoscaling;
	int64_t min_replica_count, max_replica_count; /* autoscalingSpec, when has_autoscaling */
	char *boot_disk_type;			      /* diskSpec, or NULL */
	int64_t boot_disk_size_gb;		      /* 0: not given */
};

enum stack_persistent_on_error {
	STACK_PERSISTENT_ON_ERROR_KEEP = 0, /* a resource in ERROR is shown, never replaced unasked */
	STACK_PERSISTENT_ON_ERROR_REPLACE,  /* a resource in ERROR is replaced */
};

struct stack_persistent {
	struct stack_decl d; /* address "persistent_resource.NAME"; NAME is the persistentResourceId */
	char *region;	     /* its own, or the Stack's */
	struct stack_persistent_pool *pools;
	size_t npools;
	struct stack_labels labels; /* the user's; vx adds vx-stack and vx-lineage */
	int protect;		    /* 1: the plan refuses to delete it */
	int abandon;		    /* deletionPolicy: abandon: removed from state, left running */
	enum stack_persistent_on_error on_error;
	char *spec_json; /* the canonical spec: keys sorted, int64 as strings (what is sent) */
	char *network;	 /* spec.network: the VPC it is peered with, or NULL; its jobs must name the same */
	char *kms_key_name; /* spec.encryptionSpec.kmsKeyName, or NULL */
};

/* st's persistent resources in declaration order, *n of them (n may be NULL). Borrowed. */
const struct stack_persistent *stack_persistents(const struct stack *st, size_t *n);
/* The persistent resource named name; NULL when not declared. */
const struct stack_persistent *stack_find_persistent(const struct stack *st, const char *name);
/* The pool of d with this id, or NULL. */
const struct stack_persistent_pool *stack_persistent_pool(const struct stack_persistent *d, const char *id);
/* The most machines pool p may have: max_replica_count with autoscaling, else replica_count. */
int64_t stack_persistent_pool_max(const struct stack_persistent_pool *p);

/*
 * Whether a job of spec in job_region may run on d (NULL: a resource vx does
 * not manage, named in full): its scheduling and reservation, d's region,
 * and each worker pool equal to one of d's pools (machine type, accelerator
 * type and count) with the replicas on a pool within its max
 * (docs/persistent-resources.md). 0 when it fits; 1 with *why (owned) why
 * not; VX_ENOMEM.
 */
struct job_spec;
int stack_persistent_misfit(char **why, const struct stack_persistent *d, const struct job_spec *spec,
			    const char *job_region);

/* The pool of d a job's worker pool w lands on (machine type, accelerator type and count equal), or NULL. */
struct spec_pool;
const struct stack_persistent_pool *stack_persistent_pool_for(const struct stack_persistent *d,
							      const struct spec_pool *w);
/* Whether a jobSpec's JSON (canonical or redacted; NULL: no) names persistentResourceId id. */
int stack_persistent_named_in(const char *spec_json, const char *id);
/* Whether job j runs on d: it names d's id and is in d's region. */
struct stack_job;
int stack_persistent_of_job(const struct stack_persistent *d, const struct stack_job *j);
/* The persistentResourceId job j runs on when it is none of the stack's resources (a full
 * name of one vx does not manage), else NULL. */
const char *persistent_undeclared_of_job(const struct stack *st, const struct stack_job *j);

/*
 * A job's `persistentResource:` (doc is the CustomJob document, region the
 * job's): a declared resource's name (*d set) or a full name of one in the
 * job's project and region (*d NULL); *id the persistentResourceId to send
 * (borrowed), *at the value's node. 1 when given and valid, 0 when absent,
 * -1 when reported at file:line:col.
 */
struct loader;
struct ynode;
int stack_persistent_read_ref(struct loader *L, const struct ynode *doc, const struct stack *st, const char *region,
			      const char **id, const struct stack_persistent **d, const struct ynode **at);

/* kind_persistent_load.c: the row's loader slots (struct kind), for kind_persistent.c's row. */
struct load_pass;
int kind_persistent_load_alloc(struct load_pass *B, size_t n);
int kind_persistent_load_read(struct load_pass *B, const struct ynode *doc);
int kind_persistent_decl_hash(struct stack *st);
void kind_persistent_decl_release(struct stack_kind_decls *slot);

/* The kind's row of kind_table (reconcile/kind.h). */
extern const struct kind kind_persistent;

#endif
