/*
 * A faster cJSON_ParseWithLengthOpts: see vx_json_parse_tree in util/json.h.
 *
 * cJSON reads a byte at a time through bounds-checked macros, scans each
 * string twice and calls strtod through a copy for every number: about 35
 * instructions a byte on a state record. This reads the common text (plain
 * strings, small integers, the pretty printer's whitespace) in tight loops
 * and builds the same tree with cJSON's own allocator, so cJSON_Delete, the
 * scratch arenas and every reader of the tree are unchanged. Anything it
 * does not handle itself (a malformed text, a \u escape outside the Basic
 * Multilingual Plane's non-surrogates, nesting past cJSON's limit) is left
 * to cJSON: the tree dropped, the text parsed again by cJSON, so the result,
 * the error position included, is cJSON's. tests/unit/test_util.c holds
 * both to the same tree over a corpus and its mutations.
 */
#include "util/json.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "util/banned.h"

/* cJSON's CJSON_NESTING_LIMIT; deeper is left to cJSON to refuse. */
#define DEPTH_MAX 1000

struct rd {
	const unsigned char *p, *end;
	int depth;
};

static cJSON *item_new(int type)
{
	cJSON *it = cJSON_malloc(sizeof(*it));

	if (it) {
		memset(it, 0, sizeof(*it));
		it->type = type;
	}
	return it;
}

/* As cJSON: every byte up to a space is whitespace. */
static void skip_ws(struct rd *r)
{
	while (r->p < r->end && *r->p <= 32)
		r->p++;
}

static int hex4(const unsigned char *s, unsigned *out)
{
	unsigned v = 0;

	for (int i = 0; i < 4; i++) {
		unsigned char c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	*out = v;
	return 0;
}

/* The string at r->p (its opening quote), decoded into a new buffer; NULL: leave it to cJSON. */
static char *read_string(struct rd *r)
{
	const unsigned char *s, *q;
	int escapes;
	char *out, *o;

	if (r->p >= r->end || *r->p != '"')
		return NULL;
	s = q = r->p + 1;
	/* The closing quote: the first not escaped, that is with an even run of
	 * backslashes before it (what cJSON's scan, skipping the character after
	 * each backslash, stops at). */
	for (;;) {
		const unsigned char *b;

		if (!(q = memchr(q, '"', (size_t)(r->end - q))))
			return NULL;
		for (b = q; b > s && b[-1] == '\\'; b--)
			;
		if ((q - b) % 2 == 0)
			break;
		q++;
	}
	escapes = memchr(s, '\\', (size_t)(q - s)) != NULL;
	if (!(out = cJSON_malloc((size_t)(q - s) + 1)))
		return NULL;
	if (!escapes) {
		memcpy(out, s, (size_t)(q - s));
		out[q - s] = '\0';
		r->p = q + 1;
		return out;
	}
	for (o = out; s < q; s++) {
		unsigned cp;

		if (*s != '\\') {
			*o++ = (char)*s;
			continue;
		}
		switch (*++s) {
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case '"':
		case '\\':
		case '/': *o++ = (char)*s; break;
		case 'u':
			/* Four hex digits of a code point below the surrogates or above them. */
			if (q - s < 5 || hex4(s + 1, &cp) < 0 || (cp >= 0xD800 && cp <= 0xDFFF))
				goto cjson;
			if (cp < 0x80) {
				*o++ = (char)cp;
			} else if (cp < 0x800) {
				*o++ = (char)(0xC0 | (cp >> 6));
				*o++ = (char)(0x80 | (cp & 0x3F));
			} else {
				*o++ = (char)(0xE0 | (cp >> 12));
				*o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
				*o++ = (char)(0x80 | (cp & 0x3F));
			}
			s += 4;
			break;
		default:
			goto cjson;
		}
	}
	*o = '\0';
	r->p = q + 1;
	return out;
cjson:
	cJSON_free(out);
	return NULL;
}

static int number_char(unsigned char c)
{
	return (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.' || c == 'e' || c == 'E';
}

/* As cJSON: the longest run of number characters (at most 63), read by strtod. */
static int read_number(struct rd *r, cJSON *it)
{
	const unsigned char *p = r->p, *digits;
	int neg = *p == '-';
	long long v = 0;
	double d;

	/* A plain integer of up to 15 digits is exact as a double: no strtod
	 * (but -0, which is -0.0 there). */
	digits = p += neg;
	while (p < r->end && *p >= '0' && *p <= '9' && p - digits < 15)
		v = v * 10 + (*p++ - '0');
	if (p > digits && !(p < r->end && number_char(*p)) && !(neg && v == 0)) {
		d = (double)(neg ? -v : v);
		r->p = p;
	} else {
		char buf[64], *endp = NULL;
		size_t n = 0;

		while (r->p + n < r->end && n < sizeof(buf) - 1 && number_char(r->p[n]))
			n++;
		memcpy(buf, r->p, n);
		buf[n] = '\0';
		d = strtod(buf, &endp);
		if (endp == buf)
			return -1;
		r->p += endp - buf;
	}
	it->valuedouble = d;
	if (d >= INT_MAX)
		it->valueint = INT_MAX;
	else if (d <= (double)INT_MIN)
		it->valueint = INT_MIN;
	else
		it->valueint = (int)d;
	return 0;
}

static cJSON *read_value(struct rd *r);

/* An array or an object at r->p; NULL: leave it to cJSON. */
static cJSON *read_container(struct rd *r, int object)
{
	cJSON *it = item_new(object ? cJSON_Object : cJSON_Array), *last = NULL;
	unsigned char close = object ? '}' : ']';

	if (!it)
		return NULL;
	if (++r->depth >= DEPTH_MAX)
		goto fail;
	r->p++;
	skip_ws(r);
	if (r->p < r->end && *r->p == close) {
		r->p++;
		r->depth--;
		return it;
	}
	for (;;) {
		char *key = NULL;
		cJSON *v;

		if (object) {
			skip_ws(r);
			if (!(key = read_string(r)))
				goto fail;
			skip_ws(r);
			if (r->p >= r->end || *r->p != ':') {
				cJSON_free(key);
				goto fail;
			}
			r->p++;
		}
		skip_ws(r);
		if (!(v = read_value(r))) {
			cJSON_free(key);
			goto fail;
		}
		v->string = key;
		if (last) {
			last->next = v;
			v->prev = last;
		} else {
			it->child = v;
		}
		last = v;
		skip_ws(r);
		if (r->p >= r->end)
			goto fail;
		if (*r->p == close)
			break;
		if (*r->p != ',')
			goto fail;
		r->p++;
	}
	r->p++;
	it->child->prev = last; /* as cJSON: the first item's prev is the last */
	r->depth--;
	return it;
fail:
	cJSON_Delete(it);
	return NULL;
}

static int word(struct rd *r, const char *w, size_t n)
{
	if ((size_t)(r->end - r->p) < n || memcmp(r->p, w, n) != 0)
		return 0;
	r->p += n;
	return 1;
}

static cJSON *read_value(struct rd *r)
{
	cJSON *it;

	if (r->p >= r->end)
		return NULL;
	switch (*r->p) {
	case '{':
		return read_container(r, 1);
	case '[':
		return read_container(r, 0);
	case '"':
		if (!(it = item_new(cJSON_String)))
			return NULL;
		if (!(it->valuestring = read_string(r))) {
			cJSON_free(it);
			return NULL;
		}
		return it;
	case 'n':
		return word(r, "null", 4) ? item_new(cJSON_NULL) : NULL;
	case 'f':
		return word(r, "false", 5) ? item_new(cJSON_False) : NULL;
	case 't':
		if (!word(r, "true", 4) || !(it = item_new(cJSON_True)))
			return NULL;
		it->valueint = 1;
		return it;
	default:
		if (*r->p != '-' && (*r->p < '0' || *r->p > '9'))
			return NULL;
		if (!(it = item_new(cJSON_Number)))
			return NULL;
		if (read_number(r, it) < 0) {
			cJSON_free(it);
			return NULL;
		}
		return it;
	}
}

cJSON *vx_json_parse_tree(const char *text, size_t len, const char **end)
{
	struct rd r;
	cJSON *root;

	if (end)
		*end = NULL;
	if (!text)
		return NULL;
	r.p = (const unsigned char *)text;
	r.end = r.p + len;
	r.depth = 0;
	/* cJSON's test: a byte after the mark too. */
	if (len >= 5 && !memcmp(text, "\xEF\xBB\xBF", 3))
		r.p += 3;
	skip_ws(&r);
	root = read_value(&r);
	if (root) {
		if (end)
			*end = (const char *)r.p;
		return root;
	}
	return cJSON_ParseWithLengthOpts(text, len, end, 0);
}
