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
};

/* st's persistent resources in declaration order, *n of them (n may be NULL). Borrowed. */
const struct stack_persistent *stack_persistents(const struct stack *st, size_t *n);
/* The persistent resource named name; NULL when not declared. */
const struct stack_persistent *stack_find_persistent(const struct stack *st, const char *name);
/* The pool of d with this id, or NULL. */
const struct stack_persistent_pool *stack_persistent_pool(const struct stack_persistent *d, const char *id);
/* The most machines pool p may have: max_replica_count with autoscaling, else replica_count. */
int64_t stack_persistent_pool_max(const struct stack_persistent_pool *p);

/* kind_persistent_load.c: the row's loader slots (struct kind), for kind_persistent.c's row. */
struct load_pass;
struct ynode;
int kind_persistent_load_alloc(struct load_pass *B, size_t n);
int kind_persistent_load_read(struct load_pass *B, const struct ynode *doc);
int kind_persistent_decl_hash(struct stack *st);
void kind_persistent_decl_release(struct stack_kind_decls *slot);

#endif
