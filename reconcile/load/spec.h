#ifndef VX_RECONCILE_SPEC_H
#define VX_RECONCILE_SPEC_H

/*
 * A CustomJob's `spec`: a Vertex AI CustomJobSpec exactly as
 * `gcloud ai custom-jobs create --config` takes it.
 *
 * spec_check() validates the YAML node against the real CustomJobSpec
 * schema (tables generated into reconcile/load/schema_tables.c) and the machine
 * and accelerator rules (reconcile/load/machines.c), accepts what people write in
 * YAML (integers for int64 fields, 30m/1h/1800s durations, numbers as
 * strings), and produces the canonical JSON sent to Vertex as `jobSpec`:
 * keys sorted, int64 as strings, durations as "<seconds>s", enums as names,
 * defaults treated the same way every time. vx's one extension: an EnvVar
 * may carry `sensitive: true`; it is stripped before sending, and the value
 * never reaches state, logs or the plan (see redacted_json).
 * The SHA-256 of the redacted JSON is the spec hash: two specs that differ
 * only in key order, quoting, `replicaCount: 1` vs `"1"`, or `30m` vs
 * `1800s` hash the same; any real change changes it. Without sensitive
 * values the redacted JSON is the canonical JSON, and the hash is what vx
 * always computed.
 *
 * Sensitive values are redacted as HMAC-SHA-256 keyed with the state's
 * salt, which is known only once the state is loaded: spec_check() leaves
 * a placeholder, and job_spec_rehash() (through stack_apply_salt()) must be
 * called before the hash or the redacted JSON is stored or compared.
 */

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct ynode;
struct vx_diags;

/* A Reservation declared in the same stack, for reservationAffinity by name. */
struct spec_reservation {
	const char *name;         /* the stack's name for it */
	const char *zone;         /* us-central1-a */
	const char *machine_type; /* a3-highgpu-8g */
	const char *accelerator;  /* compute's name: nvidia-h100-80gb; NULL if none */
	int64_t accelerator_count;/* per VM */
};

struct spec_env {
	const char *project;      /* for full reservation resource names */
	const char *region;       /* the job's region: a reservation's zone must be in it */
	const struct spec_reservation *reservations;
	size_t nreservations;
	/* Whether a CustomJobSpec field names held VMs the job runs on (a kind's
	 * job_ref_field: persistentResourceId; the caller passes kind_is_job_ref_field,
	 * as the loader sits below the kinds), its value then job_spec.held_ref. NULL: none does. */
	int (*held_ref_field)(const char *key);
};

struct spec_pool {
	char *machine_type;       /* NULL for an empty (skipped) pool */
	char *accelerator_type;   /* Vertex enum name (NVIDIA_H100_80GB) or NULL */
	int64_t accelerator_count;
	int64_t replica_count;
};

struct jv; /* spec.c's parsed value tree */

struct job_spec {
	char *canonical_json;     /* owned: the jobSpec as sent to Vertex (secrets included) */
	char *redacted_json;      /* owned: the same with every env value marked `sensitive: true`
				   * replaced by "hmac-sha256:<hex>" (see job_spec_rehash): what
				   * may be stored in state or shown */
	char hash[65];            /* lowercase hex SHA-256 of redacted_json */
	char legacy_hash[65];     /* SHA-256 of canonical_json, the spec hash of vx before salts
				   * (secrets in plain: never store it); == hash when nsensitive is 0.
				   * Only to recognise state records written then. */
	size_t nsensitive;        /* how many values are marked sensitive */
	struct jv *tree;          /* owned, private: the values, kept to render redacted_json
				   * again with the salt; NULL when nsensitive is 0 */
	struct spec_pool *pools;  /* owned, npools entries, in workerPoolSpecs order */
	size_t npools;
	char *strategy;           /* "STANDARD", "SPOT", "FLEX_START" (unspecified -> STANDARD) */
	int64_t max_wait_s;       /* scheduling.maxWaitDuration in seconds; -1 when unset */
	int64_t timeout_s;        /* scheduling.timeout in seconds; -1 when unset */
	char *output_uri;         /* baseOutputDirectory.outputUriPrefix or NULL */
	char *reservation;        /* name of the declared reservation it uses, or NULL */
	/* What held VMs it runs on, by the field a kind names them by (struct
	 * kind's job_ref_field: persistentResourceId), or NULL (its machines are
	 * the held ones: it draws no quota and costs nothing itself) */
	char *held_ref;
};

/*
 * Checks spec (the node under a CustomJob's `spec:`) and fills out.
 * Every problem is added to diags as "FILE:LINE:COLUMN: spec.<path>: ...",
 * with the nearest valid name for a misspelt key or enum value. Returns 0
 * when the spec is valid, VX_EINVAL when diags got at least one error, or
 * VX_ENOMEM. out is released by job_spec_release() in every case.
 */
int spec_check(struct job_spec *out, const struct ynode *spec, const struct spec_env *env,
	       struct vx_diags *diags) VX_WUR;

void job_spec_release(struct job_spec *s);

/*
 * Keys the redaction with salt (64 hex digits: the state's, state/state.h):
 * every sensitive value becomes "hmac-sha256:<hex of HMAC-SHA-256(key = the
 * 32 bytes salt stands for, value)>" in redacted_json, and hash becomes the
 * SHA-256 of that redacted_json. So a changed secret changes the hash, but
 * neither is an oracle for a guessed secret without the salt. A spec without
 * sensitive values is not touched. Returns 0, or VX_EINVAL (a bad salt),
 * VX_EIO (OpenSSL), VX_ENOMEM with err set; the spec is unchanged then.
 */
int job_spec_rehash(struct job_spec *s, const char *salt, struct vx_err *err) VX_WUR;

/*
 * "a3-highgpu-8g ×1, 8×H100 80GB, FLEX_START": the shape line the plan
 * shows. Caller frees.
 */
char *job_spec_shape(const struct job_spec *s);
/* Whether a and b have the same shape line (what job_spec_shape reads of them is equal). */
int job_spec_same_shape(const struct job_spec *a, const struct job_spec *b);

/*
 * Parses a duration as people write it (1800s, 30m, 1h, 1h30m, 7d, 0.5s,
 * or a bare number of seconds) into milliseconds. Returns 0 or VX_EINVAL.
 */
int spec_parse_duration(const char *s, int64_t *out_ms) VX_WUR;

/*
 * Lists what differs between two canonical jobSpec JSON texts, as field
 * paths ("workerPoolSpecs[0].containerSpec.args"), comma-separated, at most
 * a few, for the plan's "spec changed: ..." reason. Caller frees.
 */
char *spec_diff_paths(const char *old_json, const char *new_json);

/*
 * Walks two JSON trees (jobSpecs) and calls leaf(ud, path, a, b) at each
 * place they differ, a or b NULL where that side has nothing; path is
 * "workerPoolSpecs[0].machineSpec" ("" for the root). Objects are compared
 * key by key; arrays of the same length item by item when their items are
 * objects, and always with items set ("args[1]"); otherwise an array that
 * differs is one place. spec_diff_paths (the plan's reason) and vx import
 * (which shows the values) are its two users. 0, or VX_ENOMEM.
 */
struct cJSON;
typedef void (*spec_diff_leaf)(void *ud, const char *path, const struct cJSON *a, const struct cJSON *b);
int spec_diff_walk(const struct cJSON *a, const struct cJSON *b, int items, spec_diff_leaf leaf,
		   void *ud) VX_WUR;

#endif
