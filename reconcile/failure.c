#include "reconcile/failure.h"

#include <ctype.h>
#include <stddef.h>
#include <string.h>

#include "util/banned.h"

/* Case-insensitive substring search. */
static int contains(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	if (!hay)
		return 0;
	for (; *hay; hay++) {
		size_t i = 0;

		while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
			i++;
		if (i == n)
			return 1;
	}
	return 0;
}

const char *failure_classify(const char *state, int error_code, const char *message,
			     int cancelled_by_vx)
{
	if (!state)
		return NULL;
	if (!strcmp(state, "JOB_STATE_CANCELLED"))
		return cancelled_by_vx ? NULL : "cancelled-outside";
	if (strcmp(state, "JOB_STATE_FAILED") && strcmp(state, "JOB_STATE_EXPIRED"))
		return NULL;
	/* Order matters: a FLEX_START timeout message also talks about resources. */
	if (contains(message, "max wait") || contains(message, "maxWaitDuration") ||
	    contains(message, "max_wait_duration") || contains(message, "wait duration"))
		return "wait-timeout";
	if (contains(message, "preempt"))
		return "preempted";
	if (contains(message, "quota"))
		return "quota";
	if (contains(message, "resources are insufficient") || contains(message, "stockout") ||
	    contains(message, "does not have enough resources") ||
	    contains(message, "ZONE_RESOURCE_POOL_EXHAUSTED"))
		return "stockout";
	if (contains(message, "non-zero status") || contains(message, "exited with"))
		return "user-error";
	/* RESOURCE_EXHAUSTED without a recognisable text: capacity is the likely cause. */
	if (error_code == 8)
		return "stockout";
	return "internal";
}
