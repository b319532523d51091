#ifndef VX_RECONCILE_PROVIDER_H
#define VX_RECONCILE_PROVIDER_H

/*
 * What the planner and the apply executor need from a cloud, and nothing
 * more. reconcile/ depends on this interface, never on libcurl or on
 * providers/gcp directly (DESIGN.md section 8); providers/gcp/provider_gcp.c
 * implements it for Google Cloud, and tests can implement it in memory.
 *
 * Every function may be called from several threads at once (apply runs
 * creates in parallel): an implementation must be thread-safe.
 */

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct vx_label {
	char *key;
	char *value;
};

/* A live training job as the cloud reports it. */
struct live_job {
	char *name;           /* projects/P/locations/R/customJobs/ID */
	char *region;
	char *display_name;
	char *state;          /* Vertex JobState name: JOB_STATE_RUNNING, ... */
	struct vx_label *labels;
	size_t nlabels;
	int64_t create_ms;    /* 0 when unknown */
	int64_t end_ms;       /* 0 when not ended */
	int error_code;       /* google.rpc.Code of the job's error, 0 = none */
	char *error_message;  /* NULL = none */
};

struct live_jobs {
	struct live_job *items;
	size_t n;
};

/*
 * The caller's right to mutate, asked at the last moment: an implementation
 * MUST call check right before it sends each mutating request (every
 * attempt of it), and send nothing when check returns nonzero; then it
 * returns that code with check's message, as a certain outcome (never
 * VX_EUNCERTAIN: nothing was sent). check may be called from any thread
 * and must be quick. apply passes its state-lease fence (docs/leases.md).
 */
struct provider_fence {
	int (*check)(void *ud, struct vx_err *err);
	void *ud;
};

struct provider_job_request {
	const char *project;
	const char *region;
	const char *display_name;
	const struct vx_label *labels;
	size_t nlabels;
	const char *spec_json; /* canonical jobSpec JSON (secrets included: never logged) */
	const struct provider_fence *fence; /* NULL: none */
};

struct provider {
	/* Lists every job of the stack in one region: one filtered, paginated
	 * list call (labels.vx-stack=<stack>), never a get per job. */
	int (*list_jobs)(struct provider *p, const char *project, const char *region,
			 const char *stack, struct live_jobs *out, struct vx_err *err);
	/* Creates a job. VX_EUNCERTAIN when the request may or may not have
	 * created it: the caller must list by labels before trying again. */
	int (*create_job)(struct provider *p, const struct provider_job_request *req,
			  struct live_job *out, struct vx_err *err);
	/* Asks for cancellation (asynchronous: the job goes CANCELLING, CANCELLED).
	 * fence as in provider_job_request; NULL: none. */
	int (*cancel_job)(struct provider *p, const char *name, const struct provider_fence *fence,
			  struct vx_err *err);
	/* Releases the provider. */
	void (*free)(struct provider *p);
};

/* Deep copy and release helpers shared by implementations and tests. */
int live_job_copy(struct live_job *out, const struct live_job *in) VX_WUR;
void live_job_release(struct live_job *j);
void live_jobs_release(struct live_jobs *js);
/* Appends a deep copy of j. */
int live_jobs_push(struct live_jobs *js, const struct live_job *j) VX_WUR;
/* The value of a label, or NULL. */
const char *live_job_label(const struct live_job *j, const char *key);

/* Job states. */
int job_state_is_active(const char *state);   /* QUEUED PENDING RUNNING CANCELLING PAUSED UPDATING */
int job_state_is_terminal(const char *state); /* SUCCEEDED FAILED CANCELLED EXPIRED PARTIALLY_SUCCEEDED */
/* "running" from "JOB_STATE_RUNNING" (borrowed static text; "unknown" for NULL). */
const char *job_state_short(const char *state);

#endif
