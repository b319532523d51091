#include "util/text.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/banned.h"

size_t vx_utf8_len(const char *str, size_t left)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned char c, lo = 0x80, hi = 0xBF;
	size_t n, i;

	if (!left)
		return 0;
	c = s[0];
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		n = 2;
	else if (c >= 0xE0 && c <= 0xEF)
		n = 3;
	else if (c >= 0xF0 && c <= 0xF4)
		n = 4;
	else
		return 0;
	if (left < n)
		return 0;
	if (c == 0xE0)
		lo = 0xA0;
	else if (c == 0xED)
		hi = 0x9F; /* no surrogates */
	else if (c == 0xF0)
		lo = 0x90;
	else if (c == 0xF4)
		hi = 0x8F; /* nothing past U+10FFFF */
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 0;
	return n;
}

size_t vx_utf8_count(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xC0) != 0x80;
	return n;
}

int vx_utf8_valid(const char *s, size_t len)
{
	size_t i = 0, n;

	while (i < len) {
		if ((n = vx_utf8_len(s + i, len - i)) == 0)
			return 0;
		i += n;
	}
	return 1;
}

/*
 * The length of the well-formed UTF-8 sequence at s that encodes a
 * character we show, or 0 when the bytes are malformed or encode a C1
 * control.
 */
static size_t utf8_len(const unsigned char *s, size_t left)
{
	size_t n = vx_utf8_len((const char *)s, left);

	if (n == 2 && s[0] == 0xC2 && s[1] <= 0x9F)
		return 0; /* U+0080..U+009F: C1 controls (CSI is U+009B) */
	return n;
}

const struct vx_text_rules vx_text_clean_rules = {
	.tab = VX_TEXT_SPACE,
	.breaks = VX_TEXT_SPACE,
	.c0 = VX_TEXT_MARK,
	.c1 = VX_TEXT_MARK,
	.utf8 = 1,
};

int vx_text_add_clean(struct vx_buf *b, const char *s, size_t len)
{
	return vx_text_filter(b, s, len, &vx_text_clean_rules);
}

/* Where vx_text_filter is: what it wrote, how many characters, and whether max was reached. */
struct filter {
	struct vx_buf *b;
	const struct vx_text_rules *r;
	size_t chars;
	int full;
};

/* Whether one more character fits under max; when not, "…" ends the text. */
static int room(struct filter *f, int *rc)
{
	if (f->r->max && f->chars == f->r->max) {
		*rc = vx_buf_adds(f->b, "\xe2\x80\xa6");
		f->full = 1;
		return 0;
	}
	f->chars++;
	return 1;
}

/* Appends what action makes of the n bytes at p, one character. */
static int act(struct filter *f, enum vx_text_action action, const unsigned char *p, size_t n)
{
	int rc = 0;

	if (action == VX_TEXT_DROP || !room(f, &rc))
		return rc;
	if (action == VX_TEXT_KEEP)
		return vx_buf_add(f->b, p, n);
	return vx_buf_addc(f->b, action == VX_TEXT_SPACE ? ' ' : '?');
}

/* A run of printable ASCII at p (n bytes), as much of it as max lets through. */
static int add_printable(struct filter *f, const unsigned char *p, size_t n)
{
	size_t fit = n;
	int rc;

	if (f->r->max && fit > f->r->max - f->chars)
		fit = f->r->max - f->chars;
	f->chars += fit;
	if ((rc = vx_buf_add(f->b, p, fit)) < 0 || fit == n)
		return rc;
	room(f, &rc);
	return rc;
}

/* How many bytes at p (left of them) are a line break, a run of them when joined. */
static size_t breaks_len(const struct vx_text_rules *r, const unsigned char *p, size_t left)
{
	size_t n = 1;

	while (r->join_breaks && n < left && (p[n] == '\n' || p[n] == '\r'))
		n++;
	return n;
}

int vx_text_filter(struct vx_buf *b, const char *s, size_t len, const struct vx_text_rules *r)
{
	const unsigned char *p = (const unsigned char *)s;
	struct filter f = { b, r, 0, 0 };
	size_t i = 0, n = 0; /* n: set on every path; gcc -O1 cannot see it through r->utf8 */
	int rc = 0;

	while (i < len && rc == 0 && !f.full) {
		unsigned char c = p[i];

		if (c >= 0x20 && c < 0x7F) {
			/* A run of printable ASCII in one go. */
			for (n = i + 1; n < len && p[n] >= 0x20 && p[n] < 0x7F; n++)
				;
			rc = add_printable(&f, p + i, n - i);
		} else if (c == '\n' || c == '\r') {
			n = i + breaks_len(r, p + i, len - i);
			rc = act(&f, r->breaks, p + i, n - i);
		} else if (c < 0x80) {
			n = i + 1;
			rc = act(&f, c == '\t' ? r->tab : r->c0, p + i, 1);
		} else if (c == 0xC2 && i + 1 < len && p[i + 1] >= 0x80 && p[i + 1] <= 0x9F) {
			n = i + 2;
			rc = act(&f, r->c1, p + i, 2);
		} else if (!r->utf8 || (n = vx_utf8_len(s + i, len - i)) > 0) {
			/* A character, or a byte let through: one more only when it starts one. */
			n = r->utf8 ? i + n : i + 1;
			rc = (c & 0xC0) == 0x80 ? vx_buf_addc(b, (char)c) : act(&f, VX_TEXT_KEEP, p + i, n - i);
		} else {
			n = i + 1;
			rc = act(&f, VX_TEXT_MARK, p + i, 1);
		}
		i = n;
	}
	return rc;
}

/* Length of the escape sequence at p (ESC first): CSI "ESC [ params final",
 * OSC/DCS/APC/PM/SOS "ESC ] ... BEL or ESC \\", or ESC, intermediates and a final byte. */
static size_t escape_len(const unsigned char *p, size_t len)
{
	size_t i = 2;

	if (len < 2)
		return len;
	if (p[1] == '[') {
		while (i < len && p[i] >= 0x20 && p[i] <= 0x3F)
			i++;
		return i < len && p[i] >= 0x40 && p[i] <= 0x7E ? i + 1 : i;
	}
	if (p[1] == ']' || p[1] == 'P' || p[1] == '_' || p[1] == '^' || p[1] == 'X') {
		for (; i < len; i++) {
			if (p[i] == 0x07)
				return i + 1;
			if (p[i] == 0x1B && i + 1 < len && p[i + 1] == '\\')
				return i + 2;
		}
		return len;
	}
	/* nF: intermediates 0x20-0x2F, then one final byte ("ESC ( B"). */
	for (i = 1; i < len && p[i] >= 0x20 && p[i] <= 0x2F; i++)
		;
	return i < len ? i + 1 : len;
}

int vx_text_add_terminal_safe(struct vx_buf *b, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, n;
	int rc = 0;

	while (i < len && rc == 0) {
		if (p[i] == 0x1B) {
			i += escape_len(p + i, len - i);
			continue;
		}
		for (n = i; n < len && p[n] != 0x1B; n++)
			;
		rc = vx_text_add_clean(b, s + i, n - i);
		i = n;
	}
	return rc;
}

char *vx_text_clean(const char *s)
{
	struct vx_buf b = VX_BUF_INIT;

	if (!s)
		return NULL;
	if (vx_text_add_clean(&b, s, strlen(s)) < 0) {
		vx_buf_release(&b);
		return NULL;
	}
	return vx_buf_detach(&b);
}

int vx_text_is_clean(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, n;

	while (i < len) {
		if (p[i] >= 0x20 && p[i] < 0x7F)
			i++;
		else if (p[i] >= 0x80 && (n = utf8_len(p + i, len - i)) > 0)
			i += n;
		else
			return 0;
	}
	return 1;
}

void vx_text_redact_userinfo(char *s)
{
	char *p = s;

	while (p && (p = strstr(p, "://")) != NULL) {
		char *u = p + 3;
		size_t n = strcspn(u, "/@ \t\n'\"");

		/* The authority ends at '/', a space or a quote; userinfo is what
		 * comes before an '@' inside it. */
		/* In place, so never longer: a userinfo under three bytes becomes
		 * as many asterisks. */
		/* cppcheck-suppress arrayIndexThenCheck ; n is strcspn's length: u[n] is the '@' or the
		 * NUL that ended it, always in bounds, and n < 3 is no bound but the short case. */
		if (u[n] == '@' && n < 3) {
			memset(u, '*', n);
		} else if (u[n] == '@') {
			memmove(u + 3, u + n, strlen(u + n) + 1);
			memcpy(u, "***", 3);
			n = 3;
		}
		p = u + n;
	}
}

int vx_text_same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Where a quote may open, and what may follow one that closes. */
static int opens_after(char c)
{
	return c == ' ' || c == '(' || c == '[' || c == '{' || c == '=' || c == ':' || c == ',';
}

static int closes_before(char c)
{
	return !c || strchr(" )]},.;:?!", c) != NULL;
}

/* n, moved down to the start of the UTF-8 character it falls in. */
static size_t utf8_floor(const char *s, size_t n)
{
	while (n && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;
	return n;
}

/*
 * Writes at w the first VX_TEXT_ECHO_KEEP bytes of the len bytes at r, "…",
 * close (a quote, or NUL for none) and " (len bytes)"; the new w. Never
 * past r + len + (close != 0), as len > VX_TEXT_ECHO_LIMIT.
 */
static char *cut_to(char *w, const char *r, size_t len, char close)
{
	size_t keep = utf8_floor(r, VX_TEXT_ECHO_KEEP);
	char mark[48];
	int m;

	memmove(w, r, keep);
	w += keep;
	m = snprintf(mark, sizeof(mark), "\xe2\x80\xa6%s (%zu bytes)", close == '"' ? "\"" : close ? "'" : "", len);
	if (m > 0 && (size_t)m < sizeof(mark)) {
		memcpy(w, mark, (size_t)m);
		w += m;
	}
	return w;
}

void vx_text_cap_echoes(char *s)
{
	const char *r = s;
	char *w = s;

	if (!s)
		return;
	while (*r) {
		int at_start = r == s || opens_after(r[-1]);

		if ((*r == '"' || *r == '\'') && at_start) {
			const char *q = r + 1;

			while (*q && !(*q == *r && closes_before(q[1])))
				q++;
			if (*q && (size_t)(q - r - 1) > VX_TEXT_ECHO_LIMIT) {
				char quote = *r;
				size_t len = (size_t)(q - r - 1);

				*w++ = quote;
				w = cut_to(w, r + 1, len, quote);
				r = q + 1;
				continue;
			}
		} else if (*r != ' ' && (r == s || r[-1] == ' ')) {
			size_t len = strcspn(r, " ");

			while (len && strchr(":,;.)", r[len - 1]))
				len--;
			if (len > VX_TEXT_ECHO_LIMIT) {
				w = cut_to(w, r, len, 0);
				r += len;
				continue;
			}
		}
		*w++ = *r++;
	}
	*w = '\0';
}

size_t vx_text_find_nocase(const char *hay, size_t len, const char *needle, size_t nlen)
{
	if (nlen > len)
		return len;
	for (size_t at = 0; at + nlen <= len; at++) {
		size_t i = 0;

		while (i < nlen && tolower((unsigned char)hay[at + i]) == tolower((unsigned char)needle[i]))
			i++;
		if (i == nlen)
			return at;
	}
	return len;
}
