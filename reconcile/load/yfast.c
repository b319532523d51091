/*
 * The fast YAML reader: the subset vx's files use, read line by line into the
 * events libyaml would give for them (reconcile/load/yfast.h). It never
 * reports an error: whatever it does not read exactly as libyaml 0.2.5 does
 * (rules cited from its scanner.c and parser.c below) makes it return
 * YFAST_OTHER, and the caller reads the file again with libyaml.
 *
 * Block structure is a stack of open collections, each with the column of its
 * keys or dashes (no recursion); flow collections must open and close on one
 * line, with their own stack. The input is first checked to be printable
 * ASCII and newlines only, so a column is a byte offset and no tab, CR or
 * encoding question can arise.
 */
#include "reconcile/load/yfast.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"
#include "util/banned.h"

#define OTHER YFAST_OTHER

/* libyaml forgets a possible simple key 1024 characters after its start
 * (scanner.c, yaml_parser_stale_simple_keys): a longer key is an error there. */
#define MAX_KEY 1000

enum { FR_MAP = 1,
       FR_SEQ };

/* An open block collection. */
struct bframe {
	int kind;
	size_t indent;	/* column of its keys or dashes */
	int indentless; /* a sequence at its parent mapping's column ("key:\n- a") */
};

/* What an open flow collection expects next. */
enum fstate {
	F_SEQ_FIRST = 1, /* an entry or ']' */
	F_SEQ_ENTRY,	 /* after ',': an entry or ']' */
	F_SEQ_NEXT,	 /* ',' or ']' */
	F_MAP_KEY,	 /* a key or '}' */
	F_MAP_VALUE,	 /* after ':': a value */
	F_MAP_NEXT,	 /* ',' or '}' */
};

struct yf {
	const char *d;
	size_t len;
	size_t line; /* 0-based number of the current line */
	size_t ls;   /* offset of its first byte */
	size_t eol;  /* offset of its '\n', or len */
	yev_fn fn;
	void *ctx;

	struct bframe *fr;
	size_t nfr, afr;
	enum fstate *ff;
	size_t aff;
	char *buf; /* a double- or single-quoted scalar with escapes, unescaped */
	size_t abuf;

	/* After "key:" or "-" ending a line, the node is on a later line; if none
	 * comes, it is an empty scalar at pend_col (just past the indicator). */
	int pending; /* 0, FR_MAP or FR_SEQ */
	size_t pend_indent, pend_line, pend_col;
	int in_doc, have_root;
};

/* A scalar found on the line: its text (in the input or in buf) and where
 * scanning stopped. */
struct scalar {
	const char *s;
	size_t n;
	int quoted;
	size_t start, stop;
};

/* Characters that cannot start a plain scalar (scanner.c,
 * yaml_parser_fetch_next_token); '-', '?' and ':' are handled apart. */
static int indicator(unsigned char c)
{
	switch (c) {
	case ',':
	case '[':
	case ']':
	case '{':
	case '}':
	case '#':
	case '&':
	case '*':
	case '!':
	case '|':
	case '>':
	case '\'':
	case '"':
	case '%':
	case '@':
	case '`':
	case '?':
	case ':':
		return 1;
	default:
		return 0;
	}
}

static int flow_indicator(unsigned char c)
{
	return c == ',' || c == '[' || c == ']' || c == '{' || c == '}';
}

static int ev_at(struct yf *y, enum yev_type t, size_t line, size_t col)
{
	struct yev ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = t;
	ev.line = line;
	ev.col = col;
	return y->fn(y->ctx, &ev);
}

static int ev(struct yf *y, enum yev_type t, size_t off)
{
	return ev_at(y, t, y->line, off - y->ls);
}

static int ev_scalar_at(struct yf *y, size_t line, size_t col, const char *s, size_t n,
			int quoted)
{
	struct yev e;

	memset(&e, 0, sizeof(e));
	e.type = YEV_SCALAR;
	e.line = line;
	e.col = col;
	e.str = s;
	e.len = n;
	e.quoted = quoted;
	return y->fn(y->ctx, &e);
}

static int ev_scalar(struct yf *y, const struct scalar *sc)
{
	return ev_scalar_at(y, y->line, sc->start - y->ls, sc->s, sc->n, sc->quoted);
}

static size_t skip_spaces(const struct yf *y, size_t i)
{
	while (i < y->eol && y->d[i] == ' ')
		i++;
	return i;
}

/* Only spaces and a comment may follow a node on its line; a comment needs a
 * space before it. */
static int rest_blank(const struct yf *y, size_t i)
{
	if (i < y->eol && y->d[i] != ' ')
		return OTHER;
	i = skip_spaces(y, i);
	return i == y->eol || y->d[i] == '#' ? 0 : OTHER;
}

/*
 * A plain scalar at p on this line (scanner.c, yaml_parser_scan_plain_scalar):
 * it ends before ": " or ':' at the end of the line, before " #", and in a
 * flow collection before ",[]{}". Trailing spaces are not part of it. sc->stop
 * is where it ended: a space, the line's end, ':' or a flow indicator.
 */
static int scan_plain(const struct yf *y, size_t p, int flow, struct scalar *sc)
{
	const char *d = y->d;
	size_t e = y->eol, i = p, last = p;
	unsigned char c = (unsigned char)d[p];

	if (p >= e || c == ' ' || indicator(c) || (c == '-' && (p + 1 == e || d[p + 1] == ' ')))
		return OTHER;
	while (i < e) {
		c = (unsigned char)d[i];
		if (c == ' ') {
			size_t j = skip_spaces(y, i);

			if (j == e || d[j] == '#')
				break;
			i = j;
			continue;
		}
		if (c == ':') {
			if (i + 1 == e || d[i + 1] == ' ')
				break;
			/* 0.2.5 refuses "x:" before one of ",?[]{}" in a flow collection. */
			if (flow && (flow_indicator((unsigned char)d[i + 1]) || d[i + 1] == '?'))
				return OTHER;
		} else if (flow && flow_indicator(c)) {
			break;
		}
		i++;
		last = i;
	}
	sc->s = d + p;
	sc->n = last - p;
	sc->quoted = 0;
	sc->start = p;
	sc->stop = i;
	return 0;
}

static int buf_room(struct yf *y, size_t n)
{
	return VX_ALLOC_GROW(y->buf, n, y->abuf) < 0 ? VX_ENOMEM : 0;
}

/* The escapes of a double-quoted scalar that are one ASCII byte; the others
 * (\x, \u, \U, \N, \_, \L, \P, \0, ...) are left to libyaml. */
static int unescape(unsigned char c)
{
	switch (c) {
	case '\\': return '\\';
	case '"': return '"';
	case '/': return '/';
	case 'n': return '\n';
	case 't': return '\t';
	case 'r': return '\r';
	default: return -1;
	}
}

/* A single- or double-quoted scalar at p that closes on this line. */
static int scan_quoted(struct yf *y, size_t p, struct scalar *sc)
{
	const char *d = y->d;
	char q = d[p];
	size_t e = y->eol, i = p + 1, o = 0;
	int rc;

	/* Most have no escape: the text is the input's. (A backslash is
	 * itself in single quotes.) */
	if (q == '"')
		while (i < e && d[i] != '"' && d[i] != '\\')
			i++;
	else
		while (i < e && d[i] != '\'')
			i++;
	if (i == e)
		return OTHER;
	if (d[i] == q && !(q == '\'' && i + 1 < e && d[i + 1] == '\'')) {
		sc->s = d + p + 1;
		sc->n = i - p - 1;
		goto found;
	}
	if ((rc = buf_room(y, e - p)) < 0)
		return rc;
	for (i = p + 1;; i++) {
		if (i >= e)
			return OTHER;
		if (q == '\'') {
			if (d[i] == '\'') {
				if (i + 1 < e && d[i + 1] == '\'') {
					y->buf[o++] = '\'';
					i++;
					continue;
				}
				break;
			}
		} else if (d[i] == '"') {
			break;
		} else if (d[i] == '\\') {
			int u = i + 1 < e ? unescape((unsigned char)d[i + 1]) : -1;

			if (u < 0)
				return OTHER;
			y->buf[o++] = (char)u;
			i++;
			continue;
		}
		y->buf[o++] = d[i];
	}
	sc->s = y->buf;
	sc->n = o;
found:
	sc->quoted = 1;
	sc->start = p;
	sc->stop = i + 1;
	return 0;
}

static int push_block(struct yf *y, int kind, size_t indent, int indentless)
{
	if (VX_ALLOC_GROW(y->fr, y->nfr + 1, y->afr) < 0)
		return VX_ENOMEM;
	y->fr[y->nfr].kind = kind;
	y->fr[y->nfr].indent = indent;
	y->fr[y->nfr].indentless = indentless;
	y->nfr++;
	return 0;
}

/* The state of a flow collection's parent once a child node is done. */
static int flow_after(enum fstate *st)
{
	if (*st == F_SEQ_FIRST || *st == F_SEQ_ENTRY)
		*st = F_SEQ_NEXT;
	else if (*st == F_MAP_VALUE)
		*st = F_MAP_NEXT;
	else
		return OTHER;
	return 0;
}

/*
 * A flow collection at p ('{' or '[') that closes on this line; *after is
 * just past its closing bracket. Keys are scalars; a key without a value, an
 * empty entry or a pair inside a sequence is left to libyaml.
 */
static int parse_flow(struct yf *y, size_t p, size_t *after)
{
	const char *d = y->d;
	size_t e = y->eol, i = p, n = 0;
	struct scalar sc;
	int rc;

	for (;;) {
		enum fstate *st = n ? &y->ff[n - 1] : NULL;
		char c;

		i = skip_spaces(y, i);
		if (i == e)
			return OTHER; /* continues on the next line, or a comment */
		c = d[i];
		if (!st || (*st != F_MAP_KEY && *st != F_SEQ_NEXT && *st != F_MAP_NEXT)) {
			/* A node: the first, an entry or a value. */
			if (st && c == ']' && *st != F_MAP_VALUE) {
				if ((rc = ev(y, YEV_SEQ_END, i)) != 0)
					return rc;
				n--;
				i++;
				goto closed;
			}
			if (c == '{' || c == '[') {
				if (VX_ALLOC_GROW(y->ff, n + 1, y->aff) < 0)
					return VX_ENOMEM;
				y->ff[n++] = c == '{' ? F_MAP_KEY : F_SEQ_FIRST;
				if ((rc = ev(y, c == '{' ? YEV_MAP_START : YEV_SEQ_START, i)) != 0)
					return rc;
				i++;
				continue;
			}
			rc = c == '"' || c == '\'' ? scan_quoted(y, i, &sc) : scan_plain(y, i, 1, &sc);
			if (rc != 0)
				return rc;
			if (!st)
				return OTHER;
			if ((rc = ev_scalar(y, &sc)) != 0)
				return rc;
			i = sc.stop;
			if ((rc = flow_after(st)) != 0)
				return rc;
			continue;
		}
		switch (*st) {
		case F_MAP_KEY:
			if (c == '}') {
				if ((rc = ev(y, YEV_MAP_END, i)) != 0)
					return rc;
				n--;
				i++;
				goto closed;
			}
			if (c == '"' || c == '\'') {
				if ((rc = scan_quoted(y, i, &sc)) != 0)
					return rc;
				i = skip_spaces(y, sc.stop);
				/* In a flow collection ':' after a quoted key needs no space. */
				if (i == e || d[i] != ':')
					return OTHER;
			} else {
				if ((rc = scan_plain(y, i, 1, &sc)) != 0)
					return rc;
				i = sc.stop;
				if (i == e || d[i] != ':' || i + 1 == e)
					return OTHER;
			}
			if (i - sc.start > MAX_KEY)
				return OTHER;
			if ((rc = ev_scalar(y, &sc)) != 0)
				return rc;
			i++;
			*st = F_MAP_VALUE;
			i = skip_spaces(y, i);
			if (i == e || d[i] == ',' || d[i] == '}' || d[i] == '#')
				return OTHER; /* an empty value */
			continue;
		case F_SEQ_NEXT:
		case F_MAP_NEXT:
			if (c == ',') {
				/* An empty entry (",,") is refused there: ',' starts no scalar. */
				*st = *st == F_SEQ_NEXT ? F_SEQ_ENTRY : F_MAP_KEY;
				i++;
				continue;
			}
			if (c != (*st == F_SEQ_NEXT ? ']' : '}'))
				return OTHER;
			if ((rc = ev(y, *st == F_SEQ_NEXT ? YEV_SEQ_END : YEV_MAP_END, i)) != 0)
				return rc;
			n--;
			i++;
			goto closed;
		default:
			return OTHER;
		}
	closed:
		if (n == 0) {
			*after = i;
			return 0;
		}
		if ((rc = flow_after(&y->ff[n - 1])) != 0)
			return rc;
	}
}

/* A node that is the rest of its line: a scalar or a flow collection. */
static int inline_node(struct yf *y, size_t p)
{
	struct scalar sc;
	size_t after;
	int rc;

	if (y->d[p] == '{' || y->d[p] == '[') {
		if ((rc = parse_flow(y, p, &after)) != 0)
			return rc;
		return rest_blank(y, after);
	}
	rc = y->d[p] == '"' || y->d[p] == '\'' ? scan_quoted(y, p, &sc) : scan_plain(y, p, 0, &sc);
	if (rc != 0)
		return rc;
	if (sc.stop < y->eol && y->d[sc.stop] == ':')
		return OTHER; /* "a: b: c", or a quoted key where a value must be */
	if ((rc = rest_blank(y, sc.stop)) != 0)
		return rc;
	return ev_scalar(y, &sc);
}

/* Whether a key ("k:" followed by a space or the line's end) starts at p:
 * 0 with sc and *after (past the ':') set, 2 if not, or OTHER. */
static int scan_key(struct yf *y, size_t p, struct scalar *sc, size_t *after)
{
	size_t i;
	int rc;

	if (y->d[p] == '"' || y->d[p] == '\'') {
		if ((rc = scan_quoted(y, p, sc)) != 0)
			return rc;
		i = skip_spaces(y, sc->stop);
	} else if (y->d[p] == '{' || y->d[p] == '[') {
		return 2;
	} else {
		if ((rc = scan_plain(y, p, 0, sc)) != 0)
			return rc;
		i = sc->stop;
	}
	if (i == y->eol || y->d[i] != ':' || (i + 1 < y->eol && y->d[i + 1] != ' '))
		return 2;
	if (i - p > MAX_KEY)
		return OTHER;
	*after = i + 1;
	return 0;
}

static void set_pending(struct yf *y, int kind, size_t indent, size_t off)
{
	y->pending = kind;
	y->pend_indent = indent;
	y->pend_line = y->line;
	y->pend_col = off - y->ls;
}

/* The key at p (scanned into sc) and its value of the mapping on top. */
static int map_entry(struct yf *y, const struct scalar *sc, size_t after)
{
	size_t q;
	int rc;

	if ((rc = ev_scalar(y, sc)) != 0)
		return rc;
	q = skip_spaces(y, after);
	if (q == y->eol || y->d[q] == '#') {
		set_pending(y, FR_MAP, y->fr[y->nfr - 1].indent, after);
		return 0;
	}
	if (y->d[q] == '-' && (q + 1 == y->eol || y->d[q + 1] == ' '))
		return OTHER;
	return inline_node(y, q);
}

static int block_node(struct yf *y, size_t p);

/* A "-" at p of the sequence on top, and its entry. */
static int seq_entry(struct yf *y, size_t p)
{
	size_t q = skip_spaces(y, p + 1);

	if (q == y->eol || y->d[q] == '#') {
		set_pending(y, FR_SEQ, y->fr[y->nfr - 1].indent, p + 1);
		return 0;
	}
	return block_node(y, q);
}

/* A block node starting at p: "- " opens a sequence, "k: " a mapping (each
 * of whose first entry may open another: "- - a", "- k: v"), anything else
 * is a scalar or flow collection. */
static int block_node(struct yf *y, size_t p)
{
	struct scalar sc;
	size_t after;
	int rc;

	y->have_root = 1;
	if (y->d[p] == '-' && (p + 1 == y->eol || y->d[p + 1] == ' ')) {
		if ((rc = push_block(y, FR_SEQ, p - y->ls, 0)) != 0 ||
		    (rc = ev(y, YEV_SEQ_START, p)) != 0)
			return rc;
		return seq_entry(y, p);
	}
	rc = scan_key(y, p, &sc, &after);
	if (rc == 2)
		return inline_node(y, p);
	if (rc != 0)
		return rc;
	if ((rc = push_block(y, FR_MAP, p - y->ls, 0)) != 0 || (rc = ev(y, YEV_MAP_START, p)) != 0)
		return rc;
	return map_entry(y, &sc, after);
}

static int close_top(struct yf *y, size_t off)
{
	y->nfr--;
	return ev(y, y->fr[y->nfr].kind == FR_MAP ? YEV_MAP_END : YEV_SEQ_END, off);
}

/* A line with content at p (after its indentation). */
static int content_line(struct yf *y, size_t p)
{
	size_t indent = p - y->ls, after;
	int dash = y->d[p] == '-' && (p + 1 == y->eol || y->d[p + 1] == ' ');
	struct bframe *top;
	struct scalar sc;
	int rc;

	if (y->pending) {
		int kind = y->pending;

		y->pending = 0;
		if (indent > y->pend_indent)
			return block_node(y, p);
		if (kind == FR_MAP && dash && indent == y->pend_indent) {
			/* parser.c: a block mapping's value may be an indentless sequence. */
			if ((rc = push_block(y, FR_SEQ, indent, 1)) != 0 ||
			    (rc = ev(y, YEV_SEQ_START, p)) != 0)
				return rc;
			return seq_entry(y, p);
		}
		if ((rc = ev_scalar_at(y, y->pend_line, y->pend_col, "", 0, 0)) != 0)
			return rc;
	}
	if (!y->have_root)
		return block_node(y, p);
	while (y->nfr && (y->fr[y->nfr - 1].indent > indent ||
			  (y->fr[y->nfr - 1].indent == indent && y->fr[y->nfr - 1].indentless &&
			   !dash))) {
		if ((rc = close_top(y, p)) != 0)
			return rc;
	}
	if (!y->nfr || y->fr[y->nfr - 1].indent != indent)
		return OTHER;
	top = &y->fr[y->nfr - 1];
	if (top->kind == FR_SEQ)
		return dash ? seq_entry(y, p) : OTHER;
	rc = scan_key(y, p, &sc, &after);
	if (rc == 2)
		return OTHER;
	if (rc != 0)
		return rc;
	return map_entry(y, &sc, after);
}

/* Ends the open document; line and col are those of the token after it
 * ("---" or the end of the input), where libyaml puts an empty document's
 * null (parser.c, yaml_parser_parse_document_content). */
static int end_document(struct yf *y, size_t line, size_t col)
{
	int rc;

	if (y->pending) {
		y->pending = 0;
		if ((rc = ev_scalar_at(y, y->pend_line, y->pend_col, "", 0, 0)) != 0)
			return rc;
	}
	while (y->nfr) {
		y->nfr--;
		rc = ev_at(y, y->fr[y->nfr].kind == FR_MAP ? YEV_MAP_END : YEV_SEQ_END, line, col);
		if (rc != 0)
			return rc;
	}
	if (!y->have_root && (rc = ev_scalar_at(y, line, col, "", 0, 0)) != 0)
		return rc;
	y->in_doc = 0;
	y->have_root = 0;
	return ev_at(y, YEV_DOC_END, line, col);
}

/* Printable ASCII and newlines only. */
static int plain_ascii(const char *d, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)d[i];

		if ((c < 0x20 && c != '\n') || c >= 0x7f)
			return 0;
	}
	return 1;
}

static int parse(struct yf *y)
{
	const char *d = y->d;
	size_t pos = 0;
	int rc;

	if (!plain_ascii(d, y->len))
		return OTHER;
	if ((rc = ev_at(y, YEV_STREAM_START, 0, 0)) != 0)
		return rc;
	while (pos < y->len) {
		const char *nl = memchr(d + pos, '\n', y->len - pos);
		size_t p;

		y->ls = pos;
		y->eol = nl ? (size_t)(nl - d) : y->len;
		p = skip_spaces(y, pos);
		if (p == y->eol || d[p] == '#') {
			/* blank or a comment */
		} else if (p == pos && y->eol - p >= 3 && !memcmp(d + p, "---", 3) &&
			   (y->eol == p + 3 || d[p + 3] == ' ')) {
			if (rest_blank(y, p + 3) != 0)
				return OTHER; /* content after "---" on its line */
			if (y->in_doc && (rc = end_document(y, y->line, 0)) != 0)
				return rc;
			if ((rc = ev_at(y, YEV_DOC_START, y->line, 0)) != 0)
				return rc;
			y->in_doc = 1;
		} else if (p == pos && (d[p] == '%' || (y->eol - p >= 3 && !memcmp(d + p, "...", 3)))) {
			return OTHER;
		} else {
			if (!y->in_doc) {
				if ((rc = ev_at(y, YEV_DOC_START, y->line, p - pos)) != 0)
					return rc;
				y->in_doc = 1;
			}
			if ((rc = content_line(y, p)) != 0)
				return rc;
		}
		pos = y->eol + (nl != NULL);
		if (nl)
			y->line++;
	}
	/* scanner.c, yaml_parser_fetch_stream_end: the end is at the start of a line. */
	y->ls = pos;
	if (y->len && d[y->len - 1] != '\n')
		y->line++;
	if (y->in_doc && (rc = end_document(y, y->line, 0)) != 0)
		return rc;
	return ev_at(y, YEV_STREAM_END, y->line, 0);
}

int yfast_parse(const char *data, size_t len, yev_fn fn, void *ctx)
{
	struct yf y;
	int rc;

	memset(&y, 0, sizeof(y));
	y.d = data;
	y.len = len;
	y.fn = fn;
	y.ctx = ctx;
	rc = parse(&y);
	free(y.fr);
	free(y.ff);
	free(y.buf);
	return rc;
}
