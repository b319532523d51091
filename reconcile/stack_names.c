/*
 * The stack loader's name rules: stack and job names, Compute Engine names,
 * labels, regions, zones, projects, git branches, quota IDs and email
 * addresses. Pure functions of a string (1 when valid), no loader context.
 */
#include "reconcile/stack.h"
#include "reconcile/stack_loader.h"

#include <string.h>

#include "util/text.h"
#include "util/banned.h"

/* ---------------------------------------------------------------------- */
/* Character rules */

static int is_lower(int c) { return c >= 'a' && c <= 'z'; }
static int is_digit(int c) { return c >= '0' && c <= '9'; }

int stack_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 63 || !is_lower((unsigned char)s[0]))
		return 0;
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];

		if (!is_lower(c) && !is_digit(c) && c != '-' && c != '_')
			return 0;
	}
	return 1;
}

/* Compute Engine resource names (RFC 1035): [a-z]([-a-z0-9]*[a-z0-9])?, at most 63. */
int stack_names_rfc1035_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 63 || !is_lower((unsigned char)s[0]) || s[n - 1] == '-')
		return 0;
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];

		if (!is_lower(c) && !is_digit(c) && c != '-')
			return 0;
	}
	return 1;
}

static int label_chars_valid(const char *s)
{
	for (; *s; s++) {
		int c = (unsigned char)*s;

		if (!is_lower(c) && !is_digit(c) && c != '-' && c != '_')
			return 0;
	}
	return 1;
}

int stack_names_label_key_valid(const char *s)
{
	size_t n = strlen(s);

	return n >= 1 && n <= 64 && is_lower((unsigned char)s[0]) && label_chars_valid(s);
}

int stack_names_label_value_valid(const char *s)
{
	return strlen(s) <= 64 && label_chars_valid(s);
}

/* A region name: us-central1, europe-west4, northamerica-northeast1. */
int stack_names_region_valid(const char *s)
{
	const char *p = s;

	if (!is_lower((unsigned char)*p))
		return 0;
	while (is_lower((unsigned char)*p))
		p++;
	if (*p++ != '-' || !is_lower((unsigned char)*p))
		return 0;
	while (is_lower((unsigned char)*p))
		p++;
	if (!is_digit((unsigned char)*p))
		return 0;
	while (is_digit((unsigned char)*p))
		p++;
	return *p == '\0' && p - s <= 40;
}

/* A zone: a region and "-" and a letter: us-central1-a. */
int stack_names_zone_valid(const char *s)
{
	size_t n = strlen(s);
	char region[48];

	if (n < 4 || n >= sizeof(region) || s[n - 2] != '-' || !is_lower((unsigned char)s[n - 1]))
		return 0;
	memcpy(region, s, n - 2);
	region[n - 2] = '\0';
	return stack_names_region_valid(region);
}

/* A project ID: 6 to 30 of [a-z0-9-], starting with a letter, not ending with
 * "-"; optionally domain-scoped ("example.com:my-project"). */
int stack_names_project_valid(const char *s)
{
	const char *colon = strrchr(s, ':');
	size_t n;

	if (colon) {
		for (const char *p = s; p < colon; p++)
			if (!is_lower((unsigned char)*p) && !is_digit((unsigned char)*p) &&
			    *p != '.' && *p != '-')
				return 0;
		if (colon == s)
			return 0;
		s = colon + 1;
	}
	n = strlen(s);
	if (n < 6 || n > 30 || !is_lower((unsigned char)s[0]) || s[n - 1] == '-')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!is_lower((unsigned char)s[i]) && !is_digit((unsigned char)s[i]) && s[i] != '-')
			return 0;
	return 1;
}

/*
 * A branch name by git's rules (git-check-ref-format(1) for refs/heads/NAME,
 * plus git branch's own: not starting with "-", not "HEAD"): components
 * between "/" not empty, not starting with "." and not ending with ".lock";
 * no "..", "@{", control characters, space, "~^:?*[\\"; not ending with "."
 * or "/". Written out rather than asking libgit2 because reconcile/
 * does not depend on it (validate needs no repository); the git backend asks
 * libgit2 again when it opens, and test_stack compares the two.
 */
int stack_names_branch_valid(const char *s)
{
	size_t n = strlen(s);
	const char *c;

	if (n == 0 || n > 200 || s[0] == '-' || s[n - 1] == '/' || s[n - 1] == '.' ||
	    strstr(s, "..") || strstr(s, "@{") || !strcmp(s, "HEAD"))
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch <= ' ' || ch == 0x7f || strchr("~^:?*[\\", ch))
			return 0;
	}
	for (c = s;; c++) {
		const char *end = strchr(c, '/');
		size_t len = end ? (size_t)(end - c) : strlen(c);

		if (len == 0 || c[0] == '.' || (len >= 5 && !strncmp(c + len - 5, ".lock", 5)))
			return 0;
		if (!end)
			return 1;
		c = end;
	}
}

/* A Cloud Quotas quota ID: letters, digits, "-" and "_", not empty. */
int stack_names_quota_id_valid(const char *s)
{
	int ok = *s != '\0';

	for (const char *p = s; *p; p++)
		if (!is_lower((unsigned char)*p) && !is_digit((unsigned char)*p) &&
		    !(*p >= 'A' && *p <= 'Z') && *p != '-' && *p != '_')
			ok = 0;
	return ok;
}

/* Number of UTF-8 code points (the input is valid UTF-8). */
size_t stack_names_utf8_len(const char *s)
{
	return vx_utf8_count(s);
}

int stack_names_email_valid(const char *s)
{
	const char *at = strchr(s, '@');

	return at && at != s && !strchr(at + 1, '@') && strchr(at + 1, '.') && !strchr(s, ' ') &&
	       at[1] != '.' && s[strlen(s) - 1] != '.';
}
