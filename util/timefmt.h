#ifndef VX_UTIL_TIMEFMT_H
#define VX_UTIL_TIMEFMT_H

/*
 * RFC 3339 times, parsed in one place (strptime + timegm) for every reader:
 * the state's own times and the times Google's APIs return, and written in
 * one place (gmtime_r + strftime) for every writer.
 */

#include <stddef.h>
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

/* Room for any time vx_time_format writes, with its NUL. */
#define VX_TIME_MAX 32
/* vx_time_format: whole seconds, the milliseconds dropped. */
#define VX_TIME_SECONDS 2u

/*
 * Writes ms (Unix milliseconds, UTC) to out (size bytes, VX_TIME_MAX is
 * enough) as "2026-11-22T10:02:00Z", with ".123" before the Z when ms has
 * a fraction of a second, unless flags has VX_TIME_SECONDS. The form
 * vx_time_parse reads with VX_TIME_STRICT. Times before 1970 are written
 * as 1970-01-01T00:00:00Z, after 9999 as 9999-12-31T23:59:59.999Z.
 */
void vx_time_format(char *out, size_t size, int64_t ms, unsigned flags);

/* Room for any window vx_time_window writes, with its NUL. */
#define VX_WINDOW_MAX 64
/*
 * Writes the window [start_ms, end_ms) to out as a plan shows it: its start
 * to the minute and its length in whole days, else hours:
 * "2026-12-08 09:00 UTC for 5d", "2026-12-08 09:00 UTC for 36h".
 */
void vx_time_window(char *out, size_t size, int64_t start_ms, int64_t end_ms);

#endif
