#ifndef VX_UTIL_TIMEFMT_H
#define VX_UTIL_TIMEFMT_H

/*
 * RFC 3339 times, parsed in one place (strptime + timegm) for every reader:
 * the state's own times and the times Google's APIs return.
 */

#include <stdint.h>

#include "util/err.h"

/*
 * Only the form vx itself writes (state_time_format): "T" and "Z" upper
 * case, no offset, at most three fraction digits, no leap second, not before
 * 1970. Without it any RFC 3339 time: "T", "t" or a space, "Z", "z" or
 * +hh:mm / -hh:mm, any number of fraction digits (cut to milliseconds),
 * second 60.
 */
#define VX_TIME_STRICT 1u

/*
 * Milliseconds since the Unix epoch of the RFC 3339 time s. 0 with *out_ms
 * set; VX_EINVAL (and *out_ms untouched) when s is NULL or not such a time,
 * including a day the month does not have ("2023-02-29").
 */
int vx_time_parse(int64_t *out_ms, const char *s, unsigned flags) VX_WUR;

#endif
