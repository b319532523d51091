#ifndef VX_GCP_PERSISTENT_H
#define VX_GCP_PERSISTENT_H

/*
 * Vertex AI v1 projects.locations.persistentResources: create, get, list
 * (every page), update (PATCH with an updateMask), delete, and following
 * their google.longrunning Operations to done.
 *
 * Responses become our structs at this boundary; no JSON library type
 * appears here. The parsers are public so fuzz targets can call them; they
 * never crash on hostile input: a field of the wrong type is absent, and a
 * body that is not the expected JSON object is VX_EINVAL.
 *
 * The caller chooses the resource's id (persistentResourceId), so a create
 * is idempotent by name: the same id cannot make a second resource. It is
 * still sent once only (GCP_RETRY_NEVER): when its answer is lost the call
 * returns VX_EUNCERTAIN, and the caller reads or lists before it creates
 * again; a create answered ALREADY_EXISTS is VX_ECONFLICT ("it may be ours:
 * read it"): an earlier create whose answer was lost, or someone else's.
 *
 * Errors are set as 'vertex: creating persistent resource "pool-1" in
 * us-central1: PERMISSION_DENIED: ...'.
 */

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"
#include "util/label.h"

struct gcp_fence;
struct gcp_http;
struct vx_ctx;

/*
 * base_url as for vertex_client: "https://{region}-aiplatform.googleapis.com/v1/",
 * every "{region}" replaced by the region of each call. All members borrowed.
 */
struct persistent_client {
	struct gcp_http *http;
	const struct vx_ctx *ctx; /* clock (operation polling), interrupt flag, log */
	const char *base_url;
	/* Checked right before each mutation (create, update, delete) is sent,
	 * never before a read or an operation poll (gcp_fence in http.h); NULL: none. */
	const struct gcp_fence *fence;
};

/* PersistentResource.State, with Google's numbers (there is no 2). */
enum persistent_state {
	PERSISTENT_STATE_UNSPECIFIED = 0,
	PERSISTENT_STATE_PROVISIONING = 1,
	PERSISTENT_STATE_RUNNING = 3,
	PERSISTENT_STATE_STOPPING = 4,
	PERSISTENT_STATE_ERROR = 5,
	PERSISTENT_STATE_REBOOTING = 6,
	PERSISTENT_STATE_UPDATING = 7,
	PERSISTENT_STATE_UNKNOWN = 8, /* a name or number this client does not know */
};

/* "RUNNING", ...; "STATE_UNKNOWN" for PERSISTENT_STATE_UNKNOWN or any other value. Never NULL. */
const char *persistent_state_name(enum persistent_state s);
/* A name ("RUNNING") or a number ("3"); PERSISTENT_STATE_UNKNOWN otherwise. */
enum persistent_state persistent_state_parse(const char *s);

/* One ResourcePool. Strings owned, NULL when absent; numbers 0 when absent. */
struct persistent_pool {
	char *id;
	char *machine_type;	   /* machineSpec.machineType */
	char *accelerator_type;	   /* machineSpec.acceleratorType: the enum's name ("NVIDIA_L4") */
	int64_t accelerator_count; /* machineSpec.acceleratorCount */
	int has_replica_count;	   /* replicaCount was present (proto3 optional) */
	int64_t replica_count;
	int64_t used_replica_count; /* machines jobs use now (output only) */
	int has_autoscaling;	    /* autoscalingSpec was present */
	int64_t min_replica_count;  /* autoscalingSpec.minReplicaCount */
	int64_t max_replica_count;  /* autoscalingSpec.maxReplicaCount */
	char *boot_disk_type;	    /* diskSpec.bootDiskType */
	int64_t boot_disk_size_gb;  /* diskSpec.bootDiskSizeGb */
};

/* One PersistentResource. Owned; release with persistent_resource_release. */
struct persistent_resource {
	char *name;	    /* projects/P/locations/R/persistentResources/ID */
	char *id;	    /* ID, the last segment of a name that passes persistent_name_check */
	char *display_name; /* cleaned for a terminal */
	enum persistent_state state;
	char *state_name;	 /* as received (a name, or the number as its name), cleaned */
	int error_code;		 /* error (google.rpc.Status), set in STOPPING or ERROR; 0: none */
	char *error_message;	 /* cleaned */
	struct vx_label *labels; /* in the order received */
	size_t n_labels;
	int64_t create_time_ms; /* ms since the epoch; 0 when absent or unparsable */
	int64_t start_time_ms;	/* first time it was RUNNING */
	int64_t update_time_ms;
	struct persistent_pool *pools;
	size_t n_pools;
	char *network;	    /* network, when set */
	char *kms_key_name; /* encryptionSpec.kmsKeyName, when set */
	char *json;	    /* the whole resource re-serialised as compact JSON */
};

#define PERSISTENT_RESOURCE_INIT \
	{ \
		0 \
	}

void persistent_resource_release(struct persistent_resource *r);
/* The value of label key, or NULL. Borrowed. */
const char *persistent_resource_label(const struct persistent_resource *r, const char *key);
/* The pool with this id, or NULL. Borrowed. */
const struct persistent_pool *persistent_resource_pool(const struct persistent_resource *r, const char *id);

struct persistent_list {
	struct persistent_resource *items;
	size_t n;
	size_t alloc;
};

#define PERSISTENT_LIST_INIT \
	{ \
		NULL, 0, 0 \
	}

void persistent_list_release(struct persistent_list *l);

/* A google.longrunning.Operation of this service. */
struct persistent_operation {
	char *name;
	int done;		/* done, or an error (which says it is finished) */
	int error_code;		/* google.rpc.Code when done with an error, else 0 */
	char *error_message;	/* cleaned */
	char *progress_message; /* metadata.progressMessage, cleaned; NULL when absent */
	int has_resource;	/* response was a PersistentResource (create, update) */
	struct persistent_resource resource;
};

#define PERSISTENT_OPERATION_INIT \
	{ \
		0 \
	}

void persistent_operation_release(struct persistent_operation *op);

/*
 * 1 when id may be a persistentResourceId: 1 to 63 characters,
 * [a-z]([a-z0-9-]{0,61}[a-z0-9])? (the create request's rule), else 0.
 */
int persistent_id_ok(const char *id);

/*
 * 1 when name is exactly projects/{P}/locations/{R}/persistentResources/{ID}
 * with ID passing persistent_id_ok, R equal to region and P equal to project
 * or a project number (Google answers with numbers); NULL project or region
 * accepts any. Every name read from the server is checked with it before vx
 * acts on it.
 */
int persistent_name_check(const char *name, const char *project, const char *region);

/*
 * 1 when name is an operation of this service vx may poll:
 * projects/{P}/locations/{R}/operations/{OP} or
 * projects/{P}/locations/{R}/persistentResources/{ID}/operations/{OP}
 * (which form Google uses is not stated), OP of [A-Za-z0-9._~-], P and R as
 * for persistent_name_check.
 */
int persistent_operation_name_check(const char *name, const char *project, const char *region);

/*
 * Parsers of response bodies (body need not be NUL-terminated; NULL is
 * VX_EINVAL). The single-object parsers overwrite *out without releasing it
 * and leave it released on error. VX_EINVAL for a body that is not a JSON
 * object (or whose persistentResources is not an array), VX_ENOMEM.
 */
int persistent_resource_parse_json(const char *body, size_t len, struct persistent_resource *out,
				   struct vx_err *err) VX_WUR;
/* Appends the page's resources to *l; *next_page_token owned, NULL on the last page. */
int persistent_list_parse_json(const char *body, size_t len, struct persistent_list *l,
			       char **next_page_token, struct vx_err *err) VX_WUR;
int persistent_operation_parse_json(const char *body, size_t len, struct persistent_operation *out,
				    struct vx_err *err) VX_WUR;

/*
 * The request body: spec_json (a PersistentResource as the declaration
 * gives it, a JSON object) with labels added to its "labels" (a key the
 * spec has too takes the value given here) and without "name" (the path
 * names the resource: the id on create, the name on update). *out is owned
 * by the caller. VX_EINVAL when spec_json is not a JSON object, its labels
 * not an object, or a label has no key or value; VX_ENOMEM.
 */
int persistent_body(char **out, const char *spec_json, const struct vx_label *labels, size_t n_labels,
		    struct vx_err *err) VX_WUR;

/*
 * POST {base}/projects/P/locations/R/persistentResources?persistentResourceId=ID
 * with persistent_body(spec_json, labels). Fills *op (initialised) with the
 * Operation as first returned; follow it with persistent_operation_wait().
 * VX_EINVAL (nothing sent) for a bad project, region or id, or spec.
 * VX_EUNCERTAIN when the outcome is unknown (lost reply, 5xx after sending,
 * an answer that is not an operation of this project and region): read the
 * resource (or list) before creating again. VX_ECONFLICT for ALREADY_EXISTS.
 */
int persistent_create(struct persistent_client *c, const char *project, const char *region, const char *id,
		      const char *spec_json, const struct vx_label *labels, size_t n_labels,
		      struct persistent_operation *op, struct vx_err *err) VX_WUR;

/* GET {base}/<name>. VX_ENOTFOUND when it does not exist. get, update and delete
 * refuse (VX_EINVAL, nothing sent) a name failing persistent_name_check(name, NULL, NULL). */
int persistent_get(struct persistent_client *c, const char *name, struct persistent_resource *out,
		   struct vx_err *err) VX_WUR;

/*
 * Lists every resource of projects/P/locations/R (the method has no filter),
 * following nextPageToken to the last page (bounded as gcall_pages is),
 * appending to *out. page_size 0 = the server's default. A resource whose
 * name fails persistent_name_check(name, project, region) is left out, with
 * a warning through c->ctx's log. On error *out is released.
 */
int persistent_list(struct persistent_client *c, const char *project, const char *region, int page_size,
		    struct persistent_list *out, struct vx_err *err) VX_WUR;

/*
 * The fields an update may overwrite. Which paths Google accepts is not
 * stated; these are the ones not annotated IMMUTABLE that vx changes in place
 * (docs/persistent-resources.md): the pools (sent whole, every pool with its
 * id and machine spec, so that a replacing and an appending reading of a
 * repeated field in a mask give the same pools) and the labels.
 */
enum {
	PERSISTENT_UPDATE_POOLS = 1 << 0,  /* "resourcePools" */
	PERSISTENT_UPDATE_LABELS = 1 << 1, /* "labels" */
};

/*
 * PATCH {base}/<name>?updateMask=resourcePools,labels (the paths of mask, in
 * that order) with persistent_body(spec_json, labels). Fills *op; follow it
 * with persistent_operation_wait(). mask 0 or with other bits: VX_EINVAL,
 * nothing sent. Sent once (GCP_RETRY_NEVER): a second PATCH after a lost
 * reply would meet the first's update; VX_EUNCERTAIN then, read the resource.
 */
int persistent_update(struct persistent_client *c, const char *name, unsigned mask, const char *spec_json,
		      const struct vx_label *labels, size_t n_labels, struct persistent_operation *op,
		      struct vx_err *err) VX_WUR;

/*
 * DELETE {base}/<name>. Fills *op; follow it with persistent_operation_wait().
 * Retried on transient failures like a read: a repeated delete cannot do more
 * than the first. VX_ENOTFOUND when the resource does not exist (any more).
 */
int persistent_delete(struct persistent_client *c, const char *name, struct persistent_operation *op,
		      struct vx_err *err) VX_WUR;

/*
 * Polls GET {base}/<op->name> (1 s, x1.3, at most 60 s apart) until done, at
 * most timeout_ms (0 = 60 minutes) in all, updating *op. op->name must pass
 * persistent_operation_name_check(name, project, region) (VX_EAPI otherwise,
 * nothing sent). VX_ERETRY when time runs out (op->name stays: wait again),
 * VX_ECANCELED when ctx is interrupted; a poll's own failure is its error.
 * A done operation with an error becomes err "<what>: operation OP failed:
 * CODE_NAME: message", CODE_NAME the google.rpc.Code's name, and its code
 * VX_ENOTFOUND (NOT_FOUND), VX_ECONFLICT (ALREADY_EXISTS, ABORTED),
 * VX_EDENIED (PERMISSION_DENIED), VX_EAUTH (UNAUTHENTICATED), VX_EINVAL
 * (INVALID_ARGUMENT, FAILED_PRECONDITION, OUT_OF_RANGE: the request as it
 * was cannot succeed), VX_EAPI otherwise (RESOURCE_EXHAUSTED, INTERNAL, ...).
 * what: the context ("vertex: creating persistent resource \"p\" in r"); NULL
 * gives one naming the operation.
 */
int persistent_operation_wait(struct persistent_client *c, const char *project, const char *region,
			      struct persistent_operation *op, int64_t timeout_ms, const char *what,
			      struct vx_err *err) VX_WUR;

#endif
