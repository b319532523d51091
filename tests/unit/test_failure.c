/*
 * Unit tests for reconcile/failure.c: every text of Google's collected in
 * the table below (with where it was seen) lands in the class a careful
 * engineer would pick to decide whether a new attempt can help; and the
 * job's own facts (scheduling strategy, whether it started, whether vx
 * cancelled it) decide what no text says.
 *
 * where: "job" = the error of a CustomJob that ended JOB_STATE_FAILED;
 * "create" = a refused customJobs.create as vx words it; "gce" = Compute
 * Engine's wording, which also comes inside Vertex job errors and in
 * reservation operations (classified by the same function). code is the
 * google.rpc.Code (0 where the source gave none).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "reconcile/failure.h"

struct text_row {
	const char *id, *where;
	int code;
	const char *text, *cls, *source;
};

#define UTS "https://cloud.google.com/vertex-ai/docs/training/understanding-training-service"
#define SKY "https://github.com/skypilot-org/skypilot/blob/master/sky/backends/cloud_vm_ray_backend.py"

static const struct text_row texts[] = {
	{ "S1", "job", 8, "Resources are insufficient in region: us-central1. Try a different region or use a "
	  "different accelerator.", "stockout", UTS " (common errors table)" },
	{ "S2", "job", 0, "Resources are insufficient in region: us-central1", "stockout",
	  "https://github.com/openreview/openreview-expertise/issues/401" },
	{ "S4", "gce", 0, "The zone 'projects/graceful-castle-301212/zones/us-central1-a' does not have enough "
	  "resources available to fulfill the request. Try a different zone, or try again later.", "stockout",
	  "https://github.com/Zhen-Dong/HAWQ/issues/4" },
	{ "S5b", "gce", 8, "A VM_TYPE_AND_SIZE VM instance with RESOURCE_ATTACHMENT is currently unavailable in "
	  "the ZONE zone. Capacity changes frequently, so try your request in a different zone, with a "
	  "different VM hardware configuration, or at a later time. For more options, see troubleshooting "
	  "documentation.", "stockout", "https://github.com/Zhen-Dong/HAWQ/issues/4" },
	{ "S7", "gce", 0, "Try a different location, or try again later: Google Compute Engine does not have "
	  "enough resources available to fulfill request: us-central1-a.", "stockout",
	  "https://github.com/kubeflow/pipelines/issues/673" },
	{ "S10", "gce", 8, "Reservation does not have enough resources for the request: specific reservation "
	  "\"reservation\" is insufficient for node pool \"np4\" at zone \"us-central1-c\": required 1 and "
	  "short of 1 VM count of machine type n2-standard-2.", "stockout",
	  "https://github.com/GoogleCloudPlatform/gsutil/issues/1000" },
	{ "Q1", "job", 8, "The following quota metrics exceed quota limits: "
	  "aiplatform.googleapis.com/custom_model_training_nvidia_k80_gpus", "quota",
	  "https://github.com/GoogleCloudPlatform/vertex-ai-samples/issues/700" },
	{ "Q3", "create", 0, "vertex: creating job: RESOURCE_EXHAUSTED: The following quota metrics exceed "
	  "quota limits: aiplatform.googleapis.com/custom_model_training_nvidia_l4_gpus", "quota",
	  "https://github.com/GoogleCloudPlatform/stable-diffusion-on-gcp/issues/12" },
	{ "Q4", "create", 0, "vertex: creating job: RESOURCE_EXHAUSTED: The following quota metrics exceed "
	  "quota limits: aiplatform.googleapis.com/custom_model_training_nvidia_p4_gpus", "quota",
	  "https://openillumi.com/vertex-ai-429-gpu-quota-fix" },
	{ "Q5", "gce", 0, "Quota 'GPUS_ALL_REGIONS' exceeded.  Limit: 1.0 globally.", "quota", SKY },
	{ "Q6", "gce", 0, "Quota 'CPUS' exceeded.  Limit: 24.0 in region us-west1.", "quota", SKY },
	/* Quota in other words: AI Platform's 429 and Compute Engine's 403 (classed stockout
	 * with code 8, unknown without, before they were listed). */
	{ "Q7", "job", 8, "Quota failure for project qwiklabs-gcp-00-0123456789ab. The request for 2 K80 "
	  "accelerators exceeds the allowed maximum of 0 A100, 0 K80, 0 P100, 0 P4, 0 T4, 0 TPU_V2, 0 "
	  "TPU_V2_POD, 0 TPU_V3, 0 TPU_V3_POD, 0 V100 accelerators. To read more about Cloud ML Engine quota, "
	  "see https://cloud.google.com/ml-engine/quotas.", "quota",
	  "https://github.com/GoogleCloudPlatform/training-data-analyst/issues/2284 (429 RESOURCE_EXHAUSTED)" },
	{ "Q8", "job", 8, "The request for 2 K80 accelerators exceeds the allowed maximum of 0 A100, 0 K80, 0 "
	  "P100, 0 P4, 0 T4, 0 TPU_V2, 0 TPU_V2_POD, 0 TPU_V3, 0 TPU_V3_POD, 0 V100 accelerators.", "quota",
	  "https://github.com/GoogleCloudPlatform/training-data-analyst/issues/2284 (its QuotaFailure violation)" },
	{ "Q9", "gce", 0, "EXTERNAL: Insufficient regional quota to satisfy request for resource: \"CPUS\". The "
	  "request requires '24.0' and is short '16.0'. The regional quota is '8.0' with '8.0' available.",
	  "quota", "https://github.com/amygdala/tensorflow-workshop/issues/13" },
	{ "Q10", "gce", 8, "Insufficient regional quota to satisfy request for resource: \"IN_USE_ADDRESSES\". "
	  "The request requires '2.0' and is short '1.0'. The regional quota is '32.0' with '1.0' available.",
	  "quota", "https://github.com/kubeflow/kubeflow/issues/842" },
	{ "Q11", "create", 0, "vertex: creating job: Error creating the job. Quota failure for project "
	  "fmltc-400415. The request for 1 K80 accelerators exceeds the allowed maximum of 0 A100, 0 K80, 0 "
	  "P100, 0 P4, 0 T4, 0 TPU_V2, 0 TPU_V2_POD, 0 TPU_V3, 0 TPU_V3_POD, 0 V100 accelerators.", "quota",
	  "https://github.com/FIRST-Tech-Challenge/fmltc/issues/318" },
	/* The request names what cannot be had this way: every attempt fails the same. */
	{ "C2", "gce", 0, "Invalid value for field 'resource.instanceProperties.reservationAffinity': '{  "
	  "\"consumeReservationType\": \"SPECIFIC_ALLOCATION\",  \"key\": \"compute.googleapis.com/"
	  "reservation-name...'. Specified reservations [projects/xx/reservations/n2-standard-2-auto] can not be "
	  "targeted as specificReservationRequired is not set", "config",
	  "https://github.com/skypilot-org/skypilot/issues/3327" },
	{ "C3", "gce", 0, "The resource 'projects/leela-zero-271719/zones/europe-west2-c/acceleratorTypes/"
	  "nvidia-tesla-v100' was not found", "config", "https://github.com/bsteuber/lizzie-gcloud-setup/issues/6" },
	{ "C4", "gce", 0, "The resource 'projects/fast-ai-yesh/zones/us-west2-b/acceleratorTypes/nvidia-tesla-p100' "
	  "was not found", "config", "https://github.com/fastai/course-v3/issues/406" },
	{ "U1", "job", 3, "The replica workerpool0-0 exited with a non-zero status of 1. Termination reason: "
	  "Error.", "user-error", UTS " (template, filled)" },
	{ "U2", "job", 0, "The replica workerpool0-0 exited with a non-zero status of 1. To find out more about "
	  "why your job exited please check the logs: https://console.cloud.google.com/logs/viewer?project="
	  "619829274226&resource=ml_job%2Fjob_id%2F4606268999515242496", "user-error",
	  "https://github.com/tensorflow/models/issues/10735" },
	{ "U3", "job", 3, "The replica workerpool1-1 exited with a non-zero status of 1. Termination reason: "
	  "Error.  Traceback (most recent call last):   [...] huggingface_hub/file_download.py, line 510, in "
	  "http_get", "user-error", "https://github.com/GoogleCloudPlatform/vertex-ai-samples/pull/1504" },
	{ "U6", "job", 3, "The replica workerpool0-0 exited with a non-zero status of 139. Termination reason: "
	  "Error.", "user-error", UTS " (SIGSEGV; Vertex already retried 3x)" },
	{ "O1", "job", 3, "The replica workerpool0-0 ran out of memory and exited with a non-zero status of 137.",
	  "user-error", UTS " (Out-of-memory row, filled)" },
	{ "O3", "job", 0, "The replica master 0 exited with a non-zero status of 1. Termination reason: Error. "
	  "Traceback (most recent call last): File \"/usr/lib/python2.7/runpy.py\"", "user-error",
	  "https://github.com/tensorflow/models/issues/4294" },
	{ "I1", "job", 13, "Internal error occurred for the current attempt.", "internal",
	  UTS " (Handle internal errors); https://github.com/GoogleCloudPlatform/t5x-on-vertex-ai/issues/2" },
	{ "P1", "create", 0, "vertex: creating job: PERMISSION_DENIED: Permission 'aiplatform.customJobs.create' "
	  "denied on resource '//aiplatform.googleapis.com/projects/bqx-ml/locations/us-east1' (or it may not "
	  "exist).", "refused", "https://github.com/rhel-lightspeed/linux-mcp-server/pull/450 (same shape)" },
	{ "P2", "create", 0, "vertex: creating job: INVALID_ARGUMENT: You do not have permission to act as "
	  "service_account: 123-compute@developer.gserviceaccount.com. (or it may not exist).", "refused",
	  "https://github.com/googleapis/python-aiplatform/issues/1073" },
	{ "P3", "create", 0, "vertex: creating job: FAILED_PRECONDITION: The Cloud Storage bucket of "
	  "`gs://model_metadata_prod/aiplatform-custom-job-2021-12-05-10:15:22.264` is in location `us`. It "
	  "must be in the same regional location as the service location `us-central1`.", "refused",
	  "https://github.com/googleapis/python-aiplatform/issues/885" },
	{ "P4", "create", 0, "vertex: creating job: PERMISSION_DENIED: Permission denied on resource project My "
	  "First Project.", "refused", "https://github.com/GoogleCloudPlatform/training-data-analyst/issues/1811" },
	{ "P5", "create", 0, "vertex: creating job: FAILED_PRECONDITION: Service account "
	  "`service-789051324393@gcp-sa-aiplatform.iam.gserviceaccount.com` does not have "
	  "`[storage.objects.get]` IAM permission(s) to the directory \"gs://mco-mm/churn\".", "refused",
	  "https://github.com/GoogleCloudPlatform/vertex-ai-samples/issues/3710" },
	{ "P6", "gce", 0, "Location us-east1-d is not found or access is unauthorized.", "internal", SKY },
	{ "C1", "job", 1, "CustomJob was cancelled.", "cancelled-outside",
	  "JobState enum https://cloud.google.com/vertex-ai/docs/reference/rest/v1/JobState" },
};

static const char *classify_row(const struct text_row *r, const char *state)
{
	struct failure_input in = {
		.state = state, .error_code = r->code, .message = r->text, .scheduling = "STANDARD",
		.started = 1,
	};

	if (!strcmp(r->where, "create"))
		return failure_classify_refusal(r->text);
	return failure_classify(&in);
}

/* Every collected text, as a FAILED job (and a create's as a refusal). */
static void test_every_text_lands_in_its_class(void **state)
{
	int bad = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		const struct text_row *r = &texts[i];
		const char *got = classify_row(r, "JOB_STATE_FAILED");

		if (!got || strcmp(got, r->cls)) {
			print_error("%s (%s): got %s, want %s\n", r->id, r->source, got ? got : "(null)", r->cls);
			bad++;
		}
		/* The text alone decides: without the code (Compute Engine's texts often come without). */
		if (strcmp(r->where, "create") && r->code != 1) {
			struct text_row nocode = *r;

			nocode.code = 0;
			got = classify_row(&nocode, "JOB_STATE_FAILED");
			if (!got || strcmp(got, r->cls)) {
				print_error("%s without code %d: got %s, want %s\n", r->id, r->code,
					    got ? got : "(null)", r->cls);
				bad++;
			}
		}
	}
	/* C1 is the error of a job that ended CANCELLED. */
	assert_string_equal(classify_row(&texts[sizeof(texts) / sizeof(texts[0]) - 1], "JOB_STATE_CANCELLED"),
			    "cancelled-outside");
	assert_int_equal(bad, 0);
}

static const char *job(const char *state, int code, const char *msg, const char *sched, int started,
		       int by_vx)
{
	struct failure_input in = {
		.state = state, .error_code = code, .message = msg, .scheduling = sched,
		.started = started, .cancelled_by_vx = by_vx,
	};

	return failure_classify(&in);
}

#define S1 "Resources are insufficient in region: us-central1. Try a different region or use a different accelerator."

static void test_no_failure(void **state)
{
	(void)state;
	assert_null(job("JOB_STATE_SUCCEEDED", 0, NULL, "STANDARD", 1, 0));
	assert_null(job("JOB_STATE_RUNNING", 0, NULL, "SPOT", 1, 0));
	assert_null(job("JOB_STATE_PENDING", 0, NULL, "FLEX_START", 0, 0));
	assert_null(job(NULL, 0, NULL, NULL, 0, 0));
	assert_null(failure_classify(NULL));
	/* vx asked for the cancel: not a failure, whatever the strategy. */
	assert_null(job("JOB_STATE_CANCELLED", 1, "CustomJob was cancelled.", "FLEX_START", 0, 1));
	assert_null(job("JOB_STATE_CANCELLED", 1, "CustomJob was cancelled.", "STANDARD", 1, 1));
	assert_string_equal(job("JOB_STATE_CANCELLED", 1, "CustomJob was cancelled.", "STANDARD", 0, 0),
			    "cancelled-outside");
}

/* Google reports a reclaimed Spot VM as a STOCKOUT (use-spot-vms). */
static void test_spot_started_then_stockout_is_preempted(void **state)
{
	(void)state;
	assert_string_equal(job("JOB_STATE_FAILED", 8, S1, "SPOT", 1, 0), "preempted");
	assert_string_equal(job("JOB_STATE_FAILED", 8, "", "SPOT", 1, 0), "preempted");
	assert_string_equal(job("JOB_STATE_FAILED", 0, "Resources are insufficient in region: us-central1",
				"SPOT", 1, 0), "preempted");
	/* Never started: it stocked out. */
	assert_string_equal(job("JOB_STATE_FAILED", 8, S1, "SPOT", 0, 0), "stockout");
	/* STANDARD after a start: capacity, not a preemption. */
	assert_string_equal(job("JOB_STATE_FAILED", 8, S1, "STANDARD", 1, 0), "stockout");
	assert_string_equal(job("JOB_STATE_FAILED", 8, S1, NULL, 1, 0), "stockout");
	/* A Spot job whose code failed is a user error, started or not. */
	assert_string_equal(job("JOB_STATE_FAILED", 3, "The replica workerpool0-0 exited with a non-zero "
				"status of 1. Termination reason: Error.", "SPOT", 1, 0), "user-error");
}

/* A run on a calendar booking's reservation, ended at ended_ms; the window ends at END. */
#define END INT64_C(1768294800000) /* 2026-01-13T09:00:00Z */
static const char *windowed(const char *state, int code, const char *msg, int64_t ended_ms, int64_t window_end,
			    int by_vx)
{
	struct failure_input in = {
		.state = state,
		.error_code = code,
		.message = msg,
		.scheduling = "STANDARD",
		.started = 1,
		.cancelled_by_vx = by_vx,
		.window_end_ms = window_end,
		.ended_ms = ended_ms,
	};

	return failure_classify(&in);
}

/* Google ends the VMs at the window's end: the job's facts decide, not its text. */
static void test_a_run_ended_with_its_window_is_window_ended(void **state)
{
	const char *exit1 = "The replica workerpool0-0 exited with a non-zero status of 1. Termination reason: Error.";

	(void)state;
	assert_string_equal(windowed("JOB_STATE_FAILED", 8, S1, END, END, 0), "window-ended");
	assert_string_equal(windowed("JOB_STATE_FAILED", 13, "Internal error occurred for the current attempt.",
				     END + 30000, END, 0),
			    "window-ended");
	assert_string_equal(windowed("JOB_STATE_FAILED", 0, "something new", END, END, 0), "window-ended");
	assert_string_equal(windowed("JOB_STATE_CANCELLED", 1, "CustomJob was cancelled.", END, END, 0), "window-ended");
	assert_string_equal(windowed("JOB_STATE_EXPIRED", 0, NULL, END, END, 0), "window-ended");
	/* Up to the grace before the end, Google's teardown not being timed to the second. */
	assert_string_equal(windowed("JOB_STATE_FAILED", 8, S1, END - FAILURE_WINDOW_GRACE_MS, END, 0), "window-ended");
	assert_string_equal(windowed("JOB_STATE_FAILED", 8, S1, END - FAILURE_WINDOW_GRACE_MS - 1, END, 0), "stockout");
	/* The replica's own exit before the end keeps its class; at the end the window did it. */
	assert_string_equal(windowed("JOB_STATE_FAILED", 3, exit1, END - 60000, END, 0), "user-error");
	assert_string_equal(windowed("JOB_STATE_FAILED", 3, exit1, END, END, 0), "window-ended");
	/* Not on a booking's reservation, or the end unknown: as before. */
	assert_string_equal(windowed("JOB_STATE_FAILED", 8, S1, END, 0, 0), "stockout");
	assert_string_equal(windowed("JOB_STATE_FAILED", 8, S1, 0, END, 0), "stockout");
	/* Succeeded, active, or cancelled by vx: no failure at all. */
	assert_null(windowed("JOB_STATE_SUCCEEDED", 0, NULL, END, END, 0));
	assert_null(windowed("JOB_STATE_RUNNING", 0, NULL, 0, END, 0));
	assert_null(windowed("JOB_STATE_CANCELLED", 1, "CustomJob was cancelled.", END, END, 1));
}

/* A flex-start wait that ran out has no text: FAILED, EXPIRED or CANCELLED outside vx, never started. */
static void test_flex_start_never_started_is_wait_timeout(void **state)
{
	(void)state;
	assert_string_equal(job("JOB_STATE_FAILED", 0, NULL, "FLEX_START", 0, 0), "wait-timeout");
	assert_string_equal(job("JOB_STATE_EXPIRED", 0, NULL, "FLEX_START", 0, 0), "wait-timeout");
	assert_string_equal(job("JOB_STATE_FAILED", 8, S1, "FLEX_START", 0, 0), "wait-timeout");
	assert_string_equal(job("JOB_STATE_CANCELLED", 1, "CustomJob was cancelled.", "FLEX_START", 0, 0),
			    "wait-timeout");
	/* Once it started, a cancel outside vx is that again. */
	assert_string_equal(job("JOB_STATE_CANCELLED", 1, "CustomJob was cancelled.", "FLEX_START", 1, 0),
			    "cancelled-outside");
	/* Google's own sentence still decides when it says something else. */
	assert_string_equal(job("JOB_STATE_FAILED", 8, "The following quota metrics exceed quota limits: "
				"aiplatform.googleapis.com/custom_model_training_nvidia_h100_gpus", "FLEX_START", 0, 0),
			    "quota");
	assert_string_equal(job("JOB_STATE_FAILED", 13, "Internal error occurred for the current attempt.",
				"FLEX_START", 0, 0), "internal");
}

/* Vertex appends the replica's log after Google's sentence: it never changes the class. */
static void test_the_log_tail_never_decides(void **state)
{
	(void)state;
	assert_string_equal(job("JOB_STATE_FAILED", 3, "The replica workerpool0-0 exited with a non-zero status "
				"of 1. Termination reason: Error. Traceback (most recent call last): google.api_core."
				"exceptions.ResourceExhausted: 429 Quota exceeded for quota metric 'Requests'",
				"STANDARD", 1, 0), "user-error");
	assert_string_equal(job("JOB_STATE_FAILED", 3, "The replica workerpool0-0 exited with a non-zero status "
				"of 1. Termination reason: Error. RuntimeError: worker preempted; resources are "
				"insufficient", "SPOT", 1, 0), "user-error");
	assert_string_equal(job("JOB_STATE_FAILED", 8, "The replica workerpool0-0 ran out of memory and exited "
				"with a non-zero status of 137. Termination reason: Error. quota exceeded",
				"SPOT", 1, 0), "user-error");
	/* The words after the log link are not read either. */
	assert_string_equal(job("JOB_STATE_FAILED", 0, "Internal error occurred. To find out more about why "
				"your job exited please check the logs: https://console.cloud.google.com/logs/viewer"
				"?project=1&q=exceed quota limits", "STANDARD", 1, 0), "internal");
	assert_int_equal(failure_lead_len("The replica r exited with a non-zero status of 1. Termination reason: "
					  "Error. x"), strlen("The replica r exited with a non-zero status of 1. "));
	assert_int_equal(failure_lead_len("abc"), 3);
	assert_int_equal(failure_lead_len(NULL), 0);
}

/* Compute Engine's newer capacity wordings are stockouts without code 8. */
static void test_new_stockout_wordings(void **state)
{
	static const char *const words[] = {
		"A a3-highgpu-8g VM instance with 8 nvidia-h100-80gb accelerator(s) is currently unavailable in "
		"the us-central1-a zone. Capacity changes frequently, so try your request in a different zone.",
		"There is no more capacity in the zone \"europe-west4-a\"; you can try in another zone.",
		"Insufficient reserved capacity. Contact customer support to increase your reservation.",
		"Reservation does not have enough resources for the request",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		assert_string_equal(job("JOB_STATE_FAILED", 0, words[i], "STANDARD", 0, 0), "stockout");
}

/* A failure no rule knows is unknown (resubmitted only if resubmit.on lists it). */
static void test_unknown(void **state)
{
	(void)state;
	assert_string_equal(job("JOB_STATE_FAILED", 0, "Something new went wrong.", "STANDARD", 1, 0), "unknown");
	assert_string_equal(job("JOB_STATE_FAILED", 14, "The service is unavailable.", "STANDARD", 0, 0), "unknown");
	assert_string_equal(job("JOB_STATE_FAILED", 0, NULL, "STANDARD", 0, 0), "unknown");
	assert_string_equal(job("JOB_STATE_EXPIRED", 0, NULL, "SPOT", 0, 0), "unknown");
	/* The old guesses at words no real text uses are gone. */
	assert_string_equal(job("JOB_STATE_FAILED", 14, "The VM was preempted.", "STANDARD", 1, 0), "unknown");
}

/* Image pull failures are configuration errors: the same spec fails again. */
static void test_image_pull_is_config(void **state)
{
	static const char *const pulls[] = {
		"Error pulling image us-docker.pkg.dev/p/r/trainer:v1",
		"failed to pull image \"us-docker.pkg.dev/p/r/trainer:v1\": rpc error: code = NotFound",
		"Error response from daemon: manifest for gcr.io/p/trainer:v9 not found: manifest unknown",
		"Back-off pulling image \"gcr.io/p/trainer:v1\": ImagePullBackOff",
		"Permission \"artifactregistry.repositories.downloadArtifacts\" denied on resource "
		"\"projects/p/locations/us-central1/repositories/r\" (or it may not exist)",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(pulls) / sizeof(pulls[0]); i++)
		assert_string_equal(job("JOB_STATE_FAILED", 0, pulls[i], "STANDARD", 0, 0), "config");
	assert_string_equal(job("JOB_STATE_FAILED", 8, pulls[0], "SPOT", 1, 0), "config");
}

static void test_refused_create(void **state)
{
	(void)state;
	assert_string_equal(failure_classify_refusal("vertex: creating job: RESOURCE_EXHAUSTED: Quota exceeded "
						     "for quota metric 'Create requests'"), "quota");
	assert_string_equal(failure_classify_refusal("vertex: creating job: UNAVAILABLE: try later"), "refused");
	assert_string_equal(failure_classify_refusal(NULL), "refused");
}

/* A run started at T0 and ended after ran_ms, whose spec declares timeout_ms (0: unset). */
#define T0 INT64_C(1767225600000) /* 2026-01-01T00:00:00Z */
static const char *ran(const char *state, int64_t ran_ms, int64_t timeout_ms, int by_vx)
{
	struct failure_input in = {
		.state = state, .error_code = 1, .message = "CustomJob was cancelled.", .scheduling = "STANDARD",
		.started = 1, .cancelled_by_vx = by_vx, .started_ms = T0, .ended_ms = T0 + ran_ms,
		.timeout_ms = timeout_ms,
	};

	return failure_classify(&in);
}

/* Vertex cancels a job at its scheduling.timeout (7 days unset) and says only that it was cancelled. */
static void test_a_cancel_at_the_timeout_is_timeout(void **state)
{
	const int64_t h = 3600 * 1000, day = 24 * h;

	(void)state;
	assert_string_equal(ran("JOB_STATE_CANCELLED", 2 * h, 2 * h, 0), "timeout");
	assert_string_equal(ran("JOB_STATE_CANCELLED", 2 * h + 5000, 2 * h, 0), "timeout");
	assert_string_equal(ran("JOB_STATE_CANCELLED", 2 * h - FAILURE_TIMEOUT_GRACE_MS, 2 * h, 0), "timeout");
	assert_string_equal(ran("JOB_STATE_CANCELLED", 2 * h - FAILURE_TIMEOUT_GRACE_MS - 1, 2 * h, 0),
			    "cancelled-outside");
	assert_string_equal(ran("JOB_STATE_CANCELLED", 7 * day, 0, 0), "timeout");
	assert_string_equal(ran("JOB_STATE_CANCELLED", 6 * day, 0, 0), "cancelled-outside");
	/* vx's own cancel is no failure; a FAILED run that long is what its text says. */
	assert_null(ran("JOB_STATE_CANCELLED", 2 * h, 2 * h, 1));
	assert_string_equal(ran("JOB_STATE_FAILED", 2 * h, 2 * h, 0), "cancelled-outside");
	/* Never started, or the end not seen: not a timeout. */
	{
		struct failure_input in = {
			.state = "JOB_STATE_CANCELLED", .error_code = 1, .scheduling = "STANDARD",
			.ended_ms = T0 + 3 * h, .timeout_ms = 2 * h,
		};

		assert_string_equal(failure_classify(&in), "cancelled-outside");
		in.started_ms = T0;
		in.ended_ms = 0;
		assert_string_equal(failure_classify(&in), "cancelled-outside");
	}
}

/* The replica's exit status, from Google's sentence only. */
static void test_exit_code(void **state)
{
	(void)state;
	assert_int_equal(failure_exit_code("The replica workerpool0-0 exited with a non-zero status of 137. "
					   "Termination reason: Error."), 137);
	assert_int_equal(failure_exit_code("The replica workerpool0-0 ran out of memory and exited with a "
					   "non-zero status of 137."), 137);
	assert_int_equal(failure_exit_code("The replica workerpool1-1 exited with a non-zero status of 1. To find "
					   "out more about why your job exited please check the logs: URL"), 1);
	/* The log tail after Google's sentence never gives it. */
	assert_int_equal(failure_exit_code("The replica workerpool0-0 exited with a non-zero status of 1. "
					   "Termination reason: Error. child exited with a non-zero status of 143"), 1);
	assert_int_equal(failure_exit_code("Internal error occurred. Termination reason: Error. exited with a "
					   "non-zero status of 137"), 0);
	/* Out of range or absent: none. */
	assert_int_equal(failure_exit_code("The replica r exited with a non-zero status of 256."), 0);
	assert_int_equal(failure_exit_code("The replica r exited with a non-zero status of 99999999999999999999."), 0);
	assert_int_equal(failure_exit_code("The replica r exited with a non-zero status of x."), 0);
	assert_int_equal(failure_exit_code("Resources are insufficient in region: us-central1"), 0);
	assert_int_equal(failure_exit_code(NULL), 0);
}

static void test_spec_timeout(void **state)
{
	char t[32];

	(void)state;
	assert_int_equal(failure_spec_timeout_ms("{\"scheduling\":{\"strategy\":\"SPOT\",\"timeout\":\"7200s\"},"
						 "\"workerPoolSpecs\":[]}"), 7200000);
	assert_int_equal(failure_spec_timeout_ms("{\"scheduling\":{\"timeout\":\"90.5s\"}}"), 90000);
	/* Only scheduling's: not a label or an argument named timeout. */
	assert_int_equal(failure_spec_timeout_ms("{\"labels\":{\"timeout\":\"5s\"},\"scheduling\":{\"strategy\":"
						 "\"SPOT\"}}"), 0);
	assert_int_equal(failure_spec_timeout_ms("{\"scheduling\":{},\"x\":{\"timeout\":\"5s\"}}"), 0);
	assert_int_equal(failure_spec_timeout_ms("{\"scheduling\":{\"timeout\":\"x\"}}"), 0);
	assert_int_equal(failure_spec_timeout_ms(NULL), 0);
	failure_timeout_words(t, sizeof(t), 7200000);
	assert_string_equal(t, "2h");
	failure_timeout_words(t, sizeof(t), 90 * 60000);
	assert_string_equal(t, "90m");
	failure_timeout_words(t, sizeof(t), 0);
	assert_string_equal(t, "7d");
	failure_timeout_words(t, sizeof(t), 61000);
	assert_string_equal(t, "61s");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_text_lands_in_its_class),
		cmocka_unit_test(test_no_failure),
		cmocka_unit_test(test_spot_started_then_stockout_is_preempted),
		cmocka_unit_test(test_flex_start_never_started_is_wait_timeout),
		cmocka_unit_test(test_the_log_tail_never_decides),
		cmocka_unit_test(test_new_stockout_wordings),
		cmocka_unit_test(test_unknown),
		cmocka_unit_test(test_image_pull_is_config),
		cmocka_unit_test(test_refused_create),
		cmocka_unit_test(test_a_run_ended_with_its_window_is_window_ended),
		cmocka_unit_test(test_a_cancel_at_the_timeout_is_timeout),
		cmocka_unit_test(test_spec_timeout),
		cmocka_unit_test(test_exit_code),
	};
	return cmocka_run_group_tests_name("failure", tests, NULL, NULL);
}
