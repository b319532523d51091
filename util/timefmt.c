/* strptime is X/Open, not POSIX.1 alone. */
#define _XOPEN_SOURCE 700

#include "util/timefmt.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "util/banned.h"

void vx_time_format(char *out, size_t size, int64_t ms, unsigned flags)
{
	time_t t;
	struct tm tm;
	size_t n;
	int frac;

	if (ms < 0)
		ms = 0;
	if (ms > INT64_C(253402300799999))
		ms = INT64_C(253402300799999); /* 9999-12-31T23:59:59.999Z */
	t = (time_t)(ms / 1000);
	frac = flags & VX_TIME_SECONDS ? 0 : (int)(ms % 1000);
	/* In range, gmtime_r cannot fail and the text fits VX_TIME_MAX. */
	if (!gmtime_r(&t, &tm) || !(n = strftime(out, size, "%Y-%m-%dT%H:%M:%S", &tm))) {
		if (size)
			out[0] = '\0';
		return;
	}
	if (frac)
		snprintf(out + n, size - n, ".%03dZ", frac);
	else
		snprintf(out + n, size - n, "Z");
}

/* strptime's %Y and %m take fewer digits than RFC 3339 requires ("2017-1-5"),
 * so the layout is checked first; strptime then checks each field's range. */
static int layout_ok(const char *s)
{
	static const char layout[] = "dddd-dd-ddTdd:dd:dd";

	for (size_t i = 0; i < sizeof(layout) - 1; i++) {
		if (layout[i] == 'd' ? (s[i] < '0' || s[i] > '9')
				     : (layout[i] == 'T' ? 0 : s[i] != layout[i]))
			return 0;
	}
	return 1;
}

int vx_time_parse(int64_t *out_ms, const char *s, unsigned flags)
{
	int strict = (flags & VX_TIME_STRICT) != 0;
	char date[20];
	struct tm tm, back;
	const char *p;
	int64_t ms = 0, offset = 0;
	int nf = 0, sec;
	time_t t;

	if (!s || strlen(s) < 19 || !layout_ok(s))
		return VX_EINVAL;
	if (s[10] != 'T' && (strict || (s[10] != 't' && s[10] != ' ')))
		return VX_EINVAL;
	memcpy(date, s, 19);
	date[10] = 'T';
	date[19] = '\0';
	memset(&tm, 0, sizeof(tm));
	p = strptime(date, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!p || *p)
		return VX_EINVAL;
	p = s + 19;
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9' && !(strict && nf == 3); p++, nf++)
			if (nf < 3)
				ms = ms * 10 + (*p - '0');
		if (nf == 0)
			return VX_EINVAL;
		for (; nf < 3; nf++)
			ms *= 10;
	}
	if (*p == 'Z' || (!strict && *p == 'z')) {
		p++;
	} else if (!strict && (*p == '+' || *p == '-')) {
		int sign = *p == '-' ? -1 : 1;

		if (p[1] < '0' || p[1] > '2' || p[2] < '0' || p[2] > '9' || p[3] != ':' ||
		    p[4] < '0' || p[4] > '5' || p[5] < '0' || p[5] > '9')
			return VX_EINVAL;
		offset = sign * (((p[1] - '0') * 10 + (p[2] - '0')) * 3600 +
				 ((p[4] - '0') * 10 + (p[5] - '0')) * 60);
		if (p[1] == '2' && p[2] > '3')
			return VX_EINVAL;
		p += 6;
	} else {
		return VX_EINVAL;
	}
	if (*p)
		return VX_EINVAL;
	/* timegm would carry a leap second (and strptime's 61) into the next
	 * minute, possibly the next day; the date is checked with second 0. */
	sec = tm.tm_sec;
	if (sec > (strict ? 59 : 60))
		return VX_EINVAL;
	tm.tm_sec = 0;
	back = tm;
	t = timegm(&tm);
	if (t == (time_t)-1) /* second 0: never a real 23:59:59 of 1969 */
		return VX_EINVAL;
	/* timegm carries 2023-02-29 into March: the month must not change. */
	if (tm.tm_year != back.tm_year || tm.tm_mon != back.tm_mon || tm.tm_mday != back.tm_mday)
		return VX_EINVAL;
	if (strict && back.tm_year < 70)
		return VX_EINVAL;
	*out_ms = ((int64_t)t + sec - offset) * 1000 + ms;
	return 0;
}

void vx_time_window(char *out, size_t size, int64_t start_ms, int64_t end_ms)
{
	char t[VX_TIME_MAX];
	int64_t h = (end_ms - start_ms) / 3600000;

	vx_time_format(t, sizeof(t), start_ms, VX_TIME_SECONDS);
	if (strlen(t) >= 16) {
		t[16] = '\0';
		t[10] = ' ';
	}
	if (h % 24 == 0)
		snprintf(out, size, "%s UTC for %" PRId64 "d", t, h / 24);
	else
		snprintf(out, size, "%s UTC for %" PRId64 "h", t, h);
}
