/*
 * Failure classes from Google's own words (the table in failure.h). Every
 * wording matched here is one Google was seen to send, with its source in
 * tests/unit/test_failure.c, or a pattern that says where it comes from.
 */
#include "reconcile/failure.h"

#include <ctype.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "util/text.h"
#include "util/banned.h"

/* Case-insensitive search for needle in the first len bytes of hay; the
 * offset of the first match, or len when there is none. */
static size_t find_in(const char *hay, size_t len, const char *needle)
{
	return hay ? vx_text_find_nocase(hay, len, needle, strlen(needle)) : len;
}

static int has(const char *hay, size_t len, const char *needle)
{
	return find_in(hay, len, needle) < len;
}

static int has_any(const char *hay, size_t len, const char *const *needles)
{
	for (; *needles; needles++)
		if (has(hay, len, *needles))
			return 1;
	return 0;
}

/*
 * Where Google's sentence ends and the replica's own log begins. Vertex
 * writes "The replica R exited with a non-zero status of N. Termination
 * reason: Error." and then the tail of the log, or "... To find out more
 * about why your job exited please check the logs: URL".
 */
size_t failure_lead_len(const char *message)
{
	static const char *const marks[] = { "Termination reason:", "To find out more",
					     "Traceback (most recent call last)" };
	size_t len, end;

	if (!message)
		return 0;
	len = strlen(message);
	end = len;
	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++) {
		size_t at = find_in(message, end, marks[i]);

		if (at < end)
			end = at;
	}
	return end;
}

/* The replica's code ended it: the same spec fails the same way. */
static const char *const user_error[] = {
	"exited with a non-zero status",  /* "The replica workerpool0-0 exited with a non-zero status of 1." */
	"ran out of memory",              /* "... ran out of memory and exited with a non-zero status of 137." */
	NULL,
};

/*
 * The container image could not be pulled. No Vertex sentence for this is
 * published: these are the wordings of the tools that pull (a pattern, not
 * a quote of Vertex): Docker's "Error response from daemon: manifest for X
 * not found: manifest unknown" and "pull access denied", containerd's
 * "failed to pull image", Kubernetes' ErrImagePull / ImagePullBackOff
 * ("Back-off pulling image"), and Artifact Registry's 403 "Permission
 * \"artifactregistry.repositories.downloadArtifacts\" denied".
 */
static const char *const image_pull[] = {
	"error pulling image", "failed to pull image", "unable to pull image", "back-off pulling image",
	"pull access denied", "manifest unknown", "errimagepull", "imagepullbackoff",
	"artifactregistry.repositories.downloadArtifacts", NULL,
};

/* A table aligned by hand: clang-format would realign its comments. */
/* clang-format off */
static const char *const quota[] = {
	"exceed quota limits",            /* "The following quota metrics exceed quota limits: M" */
	/* AI Platform's 429: "Quota failure for project P. The request for 2 K80
	 * accelerators exceeds the allowed maximum of 0 A100, ...", and its
	 * QuotaFailure violation, the same sentence from "The request". */
	"quota failure for project",
	"exceeds the allowed maximum of",
	/* Compute Engine's 403: "Insufficient regional quota to satisfy request
	 * for resource: \"CPUS\". ...", and the same for a global metric
	 * (CPUS_ALL_REGIONS). */
	"insufficient regional quota",
	"insufficient project quota",
	NULL,
};
/* clang-format on */

/*
 * The request names what cannot be had this way: the same spec fails the
 * same way on every attempt. Compute Engine refuses to target a
 * reservation that does not require targeting ("Specified reservations [R]
 * can not be targeted as specificReservationRequired is not set"), and an
 * accelerator type the zone does not offer is "The resource
 * 'projects/P/zones/Z/acceleratorTypes/T' was not found".
 */
static const char *const config[] = {
	"specificReservationRequired is not set",
	NULL,
};

/* No capacity, in Vertex's and Compute Engine's words. */
static const char *const stockout[] = {
	"resources are insufficient",     /* "Resources are insufficient in region: R" */
	"does not have enough resources", /* "The zone Z does not have enough resources available ...",
					   * "Reservation does not have enough resources for the request" */
	"is currently unavailable in the",/* "A VM ... is currently unavailable in the Z zone." */
	"no more capacity",
	"insufficient reserved capacity",
	"zone_resource_pool_exhausted",   /* Compute Engine's error reason */
	"stockout",
	NULL,
};

static const char *const internal[] = {
	"internal error",                 /* "Internal error occurred for the current attempt." */
	"is not found or access is unauthorized", /* Compute Engine: "Location L is not found ..." */
	NULL,
};

/* A quota text: a listed wording, or "Quota 'GPUS_ALL_REGIONS' exceeded.  Limit: 1.0 globally." */
static int is_quota_text(const char *msg, size_t n)
{
	return has_any(msg, n, quota) || (has(msg, n, "quota '") && has(msg, n, "' exceeded"));
}

/* The class Google's leading sentence (and the code) give, before the job's
 * own facts are weighed. */
static const char *class_of_text(int code, const char *msg)
{
	size_t n = failure_lead_len(msg);

	if (has_any(msg, n, user_error))
		return "user-error";
	if (has_any(msg, n, image_pull) || (has(msg, n, "manifest for") && has(msg, n, "not found")) ||
	    has_any(msg, n, config) || (has(msg, n, "/acceleratorTypes/") && has(msg, n, "was not found")))
		return "config";
	if (is_quota_text(msg, n))
		return "quota";
	if (has_any(msg, n, stockout))
		return "stockout";
	if (has_any(msg, n, internal))
		return "internal";
	if (code == 8) /* RESOURCE_EXHAUSTED without a text known: capacity */
		return "stockout";
	if (code == 13) /* INTERNAL */
		return "internal";
	if (code == 1 || has(msg, n, "was cancelled")) /* CANCELLED: "CustomJob was cancelled." */
		return "cancelled-outside";
	return "unknown";
}

static int is(const char *s, const char *want)
{
	return s && !strcmp(s, want);
}

/*
 * A run on a calendar booking's reservation that ended at the end of its
 * window was ended by it, whatever the text (failure.h): unless the
 * replica itself exited before the end.
 */
static const char *window_class(const struct failure_input *in, const char *cls)
{
	if (!cls || in->window_end_ms <= 0 || in->ended_ms <= 0 ||
	    in->ended_ms < in->window_end_ms - FAILURE_WINDOW_GRACE_MS)
		return cls;
	if ((!strcmp(cls, "user-error") || !strcmp(cls, "config")) && in->ended_ms < in->window_end_ms)
		return cls;
	return "window-ended";
}

static const char *classify(const struct failure_input *in);

/* A run cancelled outside vx that ran as long as its timeout hit it. */
static int hit_timeout(const struct failure_input *in)
{
	int64_t limit = in->timeout_ms > 0 ? in->timeout_ms : FAILURE_DEFAULT_TIMEOUT_MS;

	return in->started_ms > 0 && in->ended_ms > in->started_ms &&
	       in->ended_ms - in->started_ms >= limit - FAILURE_TIMEOUT_GRACE_MS;
}

const char *failure_classify(const struct failure_input *in)
{
	return in ? window_class(in, classify(in)) : NULL;
}

static const char *classify(const struct failure_input *in)
{
	int cancelled, flex_unstarted;
	const char *cls;

	if (!in || !in->state)
		return NULL;
	cancelled = is(in->state, "JOB_STATE_CANCELLED");
	if (!cancelled && !is(in->state, "JOB_STATE_FAILED") && !is(in->state, "JOB_STATE_EXPIRED"))
		return NULL;
	if (in->cancelled_by_vx && (cancelled || in->error_code == 1))
		return NULL;
	/*
	 * A FLEX_START job that ended without ever starting waited out its
	 * maxWaitDuration: Google publishes no text for it. A text that says
	 * something else (quota, the image, an internal error) still decides.
	 */
	flex_unstarted = is(in->scheduling, "FLEX_START") && !in->started;
	if (cancelled && flex_unstarted)
		return "wait-timeout";
	if (cancelled)
		return hit_timeout(in) ? "timeout" : "cancelled-outside";
	cls = class_of_text(in->error_code, in->message);
	if (flex_unstarted && (!strcmp(cls, "stockout") || !strcmp(cls, "unknown") ||
			       !strcmp(cls, "cancelled-outside")))
		return "wait-timeout";
	/* Google reports a reclaimed Spot VM as a stockout: after a start it was a preemption. */
	if (!strcmp(cls, "stockout") && is(in->scheduling, "SPOT") && in->started)
		return "preempted";
	return cls;
}

const char *failure_classify_refusal(const char *message)
{
	size_t n = message ? strlen(message) : 0;

	/* 429 RESOURCE_EXHAUSTED on customJobs.create: "... exceed quota limits: M". */
	if (is_quota_text(message, n) || (has(message, n, "RESOURCE_EXHAUSTED") && has(message, n, "quota")))
		return "quota";
	return "refused";
}

const char *failure_spec_strategy(const char *spec_json)
{
	static const char *const known[] = { "SPOT", "FLEX_START", "STANDARD" };
	/* The canonical form is compact JSON, and a CustomJob spec has one
	 * "strategy" (scheduling.strategy). */
	const char *at = spec_json ? strstr(spec_json, "\"strategy\":\"") : NULL;

	if (!at)
		return NULL;
	at += strlen("\"strategy\":\"");
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		size_t n = strlen(known[i]);

		if (!strncmp(at, known[i], n) && at[n] == '"')
			return known[i];
	}
	return NULL;
}

int64_t failure_spec_timeout_ms(const char *spec_json)
{
	/* Canonical: compact JSON, scheduling an object of scalars, durations
	 * in whole seconds ("7200s"). */
	const char *at = spec_json ? strstr(spec_json, "\"scheduling\":{") : NULL;
	const char *end = at ? strchr(at, '}') : NULL, *t;
	int64_t s = 0;

	if (!end || !(t = strstr(at, "\"timeout\":\"")) || t > end)
		return 0;
	for (t += strlen("\"timeout\":\""); isdigit((unsigned char)*t) && s < INT64_MAX / 10000; t++)
		s = s * 10 + (*t - '0');
	return *t == 's' || *t == '.' ? s * 1000 : 0;
}

void failure_timeout_words(char *out, size_t size, int64_t timeout_ms)
{
	static const struct {
		int64_t ms;
		const char *unit;
	} units[] = { { 86400000, "d" }, { 3600000, "h" }, { 60000, "m" }, { 1000, "s" } };
	int64_t ms = timeout_ms > 0 ? timeout_ms : FAILURE_DEFAULT_TIMEOUT_MS;

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (ms % units[i].ms == 0 || i + 1 == sizeof(units) / sizeof(units[0])) {
			snprintf(out, size, "%" PRId64 "%s", ms / units[i].ms, units[i].unit);
			return;
		}
}

int failure_exit_code(const char *message)
{
	static const char mark[] = "exited with a non-zero status of ";
	size_t n = failure_lead_len(message), at = find_in(message, n, mark);
	int code = 0;

	if (at >= n)
		return 0;
	for (at += strlen(mark); at < n && isdigit((unsigned char)message[at]) && code <= 255; at++)
		code = code * 10 + (message[at] - '0');
	return code >= 1 && code <= 255 ? code : 0;
}
