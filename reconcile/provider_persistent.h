#ifndef VX_RECONCILE_PROVIDER_PERSISTENT_H
#define VX_RECONCILE_PROVIDER_PERSISTENT_H

/*
 * The client interface of the persistent resource kind (Vertex AI
 * persistentResources): what the cloud reports of one, what a create
 * carries, the kind's operations and the helpers over them. See
 * reconcile/provider.h.
 */
#include <stddef.h>
#include <stdint.h>

#include "reconcile/provider.h"
#include "util/err.h"
#include "util/label.h"

/* One of a live resource's pools. */
struct live_persistent_pool {
	char *id;
	char *machine_type;
	char *accelerator_type; /* Vertex's name ("NVIDIA_L4"), or NULL */
	int64_t accelerator_count;
	int64_t replica_count;
	int64_t used_replica_count; /* machines jobs use now */
	int has_autoscaling;
	int64_t min_replica_count, max_replica_count;
	char *boot_disk_type;
	int64_t boot_disk_size_gb;
};

/* A persistent resource as the cloud reports it; vx proves its own by its labels. */
struct live_persistent {
	char *id;      /* the persistentResourceId (also the address's NAME) */
	char *name;    /* projects/P/locations/R/persistentResources/ID as listed (P may be a number) */
	char *project; /* the project id it was listed in */
	char *region;
	char *state;	     /* PROVISIONING, RUNNING, STOPPING, ERROR, REBOOTING, UPDATING, ... */
	char *error_message; /* set in ERROR or STOPPING, else NULL */
	struct vx_label *labels;
	size_t nlabels;
	struct live_persistent_pool *pools;
	size_t npools;
	int64_t create_ms; /* 0 when unknown */
	char *network;	   /* the VPC it is peered with, as listed, or NULL */
	char *kms_key_name; /* encryptionSpec.kmsKeyName, or NULL */
};

struct live_persistents {
	struct live_persistent *items;
	size_t n;
};

struct provider_persistent_request {
	const char *project;
	const char *region;
	const char *id;
	const char *spec_json; /* a PersistentResource (JSON), without labels and name */
	const struct vx_label *labels;
	size_t nlabels;
	const struct provider_fence *fence; /* NULL: none */
};

/* What an update overwrites (its updateMask). */
enum {
	PROVIDER_PERSISTENT_POOLS = 1 << 0,  /* resourcePools */
	PROVIDER_PERSISTENT_LABELS = 1 << 1, /* labels */
};

/*
 * Persistent resources (Vertex AI, one region). list: every page of the
 * region's list. create, update and del send the request and follow its
 * operation to done (VX_EUNCERTAIN when the outcome is unknown: the caller
 * lists before trying again; VX_ECONFLICT when the id is taken: read it).
 * create and update fill *out with the resource as read after the
 * operation (req->id's; a failed create's ERROR resource too, when one is
 * left: then out->id is set and the call fails).
 */
struct provider_persistent_ops {
	int (*list)(struct provider *p, const char *project, const char *region, struct live_persistents *out,
		    struct vx_err *err);
	int (*create)(struct provider *p, const struct provider_persistent_request *req, struct live_persistent *out,
		      struct vx_err *err);
	int (*update)(struct provider *p, const struct provider_persistent_request *req, unsigned mask,
		      struct live_persistent *out, struct vx_err *err);
	int (*del)(struct provider *p, const char *project, const char *region, const char *id,
		   const struct provider_fence *fence, struct vx_err *err);
};

/* The kind's interface (struct provider's tables, PROVIDER_HAS(p, persistent, op)). */
extern const struct provider_kind provider_kind_persistent;

int provider_persistent_list(struct provider *p, const char *project, const char *region,
			     struct live_persistents *out, struct vx_err *err);
int provider_persistent_create(struct provider *p, const struct provider_persistent_request *req,
			       struct live_persistent *out, struct vx_err *err);
int provider_persistent_update(struct provider *p, const struct provider_persistent_request *req, unsigned mask,
			       struct live_persistent *out, struct vx_err *err);
int provider_persistent_del(struct provider *p, const char *project, const char *region, const char *id,
			    const struct provider_fence *fence, struct vx_err *err);

/* Deep copy and release helpers. */
int live_persistent_copy(struct live_persistent *out, const struct live_persistent *in) VX_WUR;
void live_persistent_release(struct live_persistent *r);
void live_persistents_release(struct live_persistents *rs);
int live_persistents_push(struct live_persistents *rs, const struct live_persistent *r) VX_WUR;
/* The value of label key, or NULL. */
const char *live_persistent_label(const struct live_persistent *r, const char *key);

#endif
