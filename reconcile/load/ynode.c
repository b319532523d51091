/*
 * The YAML loader: libyaml's event stream turned into our own node tree
 * (reconcile/load/ynode.h), with every limit that keeps hostile input harmless.
 *
 * Why events and not libyaml's document API: the document API expands
 * nothing but also checks nothing, and walking its tree needs recursion. With
 * events we keep an explicit stack of open collections (no recursion in this
 * file at all), refuse nesting past limits->max_depth as soon as it is opened,
 * and resolve an alias by pointing at the anchored node while adding that
 * node's expanded size to a running count, so an alias bomb is refused after
 * a few dozen nodes are allocated, not a billion.
 *
 * Memory: every node, string and array of a file lives in one arena of large
 * blocks, freed at once by yfile_free(). Scratch state (the event stack, the
 * anchor table, the duplicate-key table) is on the heap and freed before
 * returning, on every path.
 */
#include "reconcile/load/ynode.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yaml.h>

#include "util/alloc.h"
#include "util/arena.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/hashmap.h"
#include "reconcile/load/yfast.h"
#include "util/banned.h"

#define TAG_NULL "tag:yaml.org,2002:null"
#define TAG_BOOL "tag:yaml.org,2002:bool"
#define TAG_INT "tag:yaml.org,2002:int"
#define TAG_FLOAT "tag:yaml.org,2002:float"
#define TAG_STR "tag:yaml.org,2002:str"
#define TAG_MERGE "tag:yaml.org,2002:merge"

/* A file's arena (on the heap, as the yfile inside it is) and its blocks. */
static void arena_free(struct vx_arena *a)
{
	if (a) {
		vx_arena_release(a);
		free(a);
	}
}

/* ---- small growable arrays (scratch, on the heap) -------------------- */

/* ---- loader state ----------------------------------------------------- */

/* An anchor of the current document (a new document empties the table). */
struct anchor {
	const char *name; /* in the arena */
	struct ynode *node;
	size_t size;   /* expanded node count of node */
	size_t height; /* levels of nesting inside node (0 for a scalar) */
};

/* An open sequence or mapping. Its children sit on loader.kids from 'first'. */
struct frame {
	struct ynode *node;
	size_t first;
	size_t count_at_open; /* loader.expanded when opened: gives the anchor's size */
	size_t height;        /* max height of the children so far */
	char *anchor;         /* libyaml's anchor name, owned (malloc) until close */
	int has_merge;
};

struct loader {
	struct vx_arena *arena;
	const char *file; /* the yfile's path, in the arena */
	const char *data;
	size_t len;
	const struct ynode_limits *lim;
	struct vx_diags *diags;
	struct vx_err *err;
	size_t nerrors;
	int fatal; /* a limit was hit or memory ran out: stop reading */
	int oom;   /* memory ran out: fail with VX_ENOMEM, whatever else happened */

	struct frame *frames;
	size_t nframes, aframes;
	struct ynode **kids;
	size_t nkids, akids;
	struct ynode **docs;
	size_t ndocs, adocs;

	struct anchor *anchors;
	size_t nanchors, aanchors;
	struct vx_hashmap anchor_index; /* name -> index into anchors */

	struct vx_hashmap keytab; /* duplicate keys of one mapping: key -> index into its pairs */

	size_t expanded; /* nodes in the file so far, with every alias expanded */
};

static int is_cont(unsigned char c)
{
	return (c & 0xC0) == 0x80;
}

static void report(struct loader *l, unsigned line, unsigned col, const char *fmt, ...)
	VX_PRINTF(4, 5);

static void report(struct loader *l, unsigned line, unsigned col, const char *fmt, ...)
{
	struct vx_buf b = VX_BUF_INIT;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vx_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	l->nerrors++;
	if (rc < 0 || vx_diags_add(l->diags, l->file, line, col, "%s", vx_buf_str(&b)) < 0)
		l->fatal = 1;
	vx_buf_release(&b);
}

/* Text from the file shown in a message: at most about 60 bytes, cut on a
 * character boundary, control characters escaped, so that a message stays
 * one readable line whatever the input holds. */
#define SHOW_MAX 60
struct shown {
	char s[SHOW_MAX * 4 + 8];
};

static const char *show(struct shown *out, const char *s, size_t len)
{
	size_t i = 0, o = 0;

	while (i < len && o < SHOW_MAX) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c == 0x7f || c == '"' || c == '\\') {
			o += (size_t)snprintf(out->s + o, sizeof(out->s) - o,
					      c == '"' || c == '\\' ? "\\%c" : "\\x%02X", c);
			i++;
			continue;
		}
		do {
			out->s[o++] = s[i++];
		} while (i < len && is_cont((unsigned char)s[i]));
	}
	if (i < len) {
		out->s[o++] = '.';
		out->s[o++] = '.';
		out->s[o++] = '.';
	}
	out->s[o] = '\0';
	return out->s;
}

static int oom(struct loader *l)
{
	l->fatal = 1;
	l->oom = 1;
	return vx_err_set(l->err, VX_ENOMEM, "%s: out of memory", l->file);
}

/* The limit in words people use: "8 MiB", "64 KiB" or "1000 bytes". */
static void size_words(char *out, size_t outlen, size_t n)
{
	if (n && n % (1u << 20) == 0)
		snprintf(out, outlen, "%zu MiB", n >> 20);
	else if (n && n % 1024 == 0)
		snprintf(out, outlen, "%zu KiB", n >> 10);
	else
		snprintf(out, outlen, "%zu-byte", n);
}

/* ---- positions of libyaml errors --------------------------------------- */

/* Line and column (1-based, column in characters) of byte offset off. */
static void offset_pos(const char *d, size_t len, size_t off, unsigned *line, unsigned *col)
{
	size_t i, ln = 1, cl = 1;

	if (off > len)
		off = len;
	for (i = 0; i < off; i++) {
		unsigned char c = (unsigned char)d[i];

		if (c == '\n' || (c == '\r' && (i + 1 >= len || d[i + 1] != '\n'))) {
			ln++;
			cl = 1;
		} else if (c != '\r' && !is_cont(c)) {
			cl++;
		}
	}
	*line = ln > UINT32_MAX ? UINT32_MAX : (unsigned)ln;
	*col = cl > UINT32_MAX ? UINT32_MAX : (unsigned)cl;
}

/* Byte offset of a libyaml mark (0-based line and character column), or len. */
static size_t mark_offset(const char *d, size_t len, size_t line, size_t col)
{
	size_t i = 0;

	while (line && i < len) {
		if (d[i] == '\n' || (d[i] == '\r' && (i + 1 >= len || d[i + 1] != '\n')))
			line--;
		i++;
	}
	while (col && i < len) {
		i++;
		while (i < len && is_cont((unsigned char)d[i]))
			i++;
		col--;
	}
	return i;
}

static void report_reader_error(struct loader *l, const yaml_parser_t *p)
{
	size_t off = p->problem_offset;
	unsigned line, col;
	unsigned char c;

	if (off > l->len)
		off = l->len;
	/* For a bad continuation byte libyaml points past the lead byte: point
	 * at the character that is broken instead. */
	if (p->problem && strstr(p->problem, "UTF-8") && !strstr(p->problem, "leading")) {
		size_t k = 0;

		while (off > 0 && k < 4 && (k == 0 || is_cont((unsigned char)l->data[off]))) {
			off--;
			k++;
			if (!is_cont((unsigned char)l->data[off]))
				break;
		}
	}
	offset_pos(l->data, l->len, off, &line, &col);
	c = off < l->len ? (unsigned char)l->data[off] : 0;
	if (p->problem && strstr(p->problem, "control characters")) {
		if (p->problem_value == 0)
			report(l, line, col, "NUL byte in the file; YAML files must be UTF-8 text");
		else
			report(l, line, col, "control character U+%04X is not allowed in YAML",
			       (unsigned)p->problem_value);
	} else if (p->problem && strstr(p->problem, "UTF-8")) {
		report(l, line, col, "invalid UTF-8 (byte 0x%02X); YAML files must be UTF-8 text", c);
	} else {
		report(l, line, col, "%s", p->problem ? p->problem : "cannot read the input");
	}
}

static void report_parser_error(struct loader *l, const yaml_parser_t *p)
{
	unsigned line = (unsigned)p->problem_mark.line + 1;
	unsigned col = (unsigned)p->problem_mark.column + 1;
	const char *problem = p->problem ? p->problem : "invalid YAML";
	size_t off;

	if (p->error == YAML_READER_ERROR) {
		report_reader_error(l, p);
		return;
	}
	if (p->error == YAML_MEMORY_ERROR) {
		oom(l);
		return;
	}
	off = mark_offset(l->data, l->len, p->problem_mark.line, p->problem_mark.column);
	if (off < l->len && l->data[off] == '\t') {
		size_t s = off;

		while (s > 0 && (l->data[s - 1] == ' ' || l->data[s - 1] == '\t'))
			s--;
		if (s == 0 || l->data[s - 1] == '\n' || l->data[s - 1] == '\r')
			report(l, line, col, "tab character used for indentation; YAML allows only spaces");
		else
			report(l, line, col, "tab character not allowed here; YAML allows only spaces");
		return;
	}
	if (!strcmp(problem, "mapping values are not allowed in this context"))
		problem = "mapping values are not allowed here";
	if (p->context && (p->context_mark.line != p->problem_mark.line ||
			   p->context_mark.column != p->problem_mark.column))
		report(l, line, col, "%s (%s that started at line %u, column %u)", problem,
		       p->context, (unsigned)p->context_mark.line + 1,
		       (unsigned)p->context_mark.column + 1);
	else
		report(l, line, col, "%s", problem);
}

/* ---- anchors ------------------------------------------------------------ */

static int anchor_set(struct loader *l, const char *name, struct ynode *node, size_t size,
		      size_t height)
{
	size_t len = strlen(name), i;
	struct anchor *a;

	if (vx_hashmap_get(&l->anchor_index, name, len, &i)) {
		a = &l->anchors[i];
	} else {
		if (VX_ALLOC_GROW(l->anchors, l->nanchors + 1, l->aanchors) < 0)
			return oom(l);
		a = &l->anchors[l->nanchors];
		a->name = vx_arena_strndup(l->arena, name, len);
		if (!a->name || vx_hashmap_add(&l->anchor_index, a->name, len, l->nanchors, NULL) < 0)
			return oom(l);
		l->nanchors++;
	}
	/* a is never NULL: an index the map holds is one anchors has (the analyzer
	 * cannot see that across vx_hashmap_get).
	 * NOLINTNEXTLINE(clang-analyzer-core.NullDereference) */
	a->node = node;
	a->size = size;
	a->height = height;
	return 0;
}

static const struct anchor *anchor_get(struct loader *l, const char *name)
{
	size_t i;

	return vx_hashmap_get(&l->anchor_index, name, strlen(name), &i) ? &l->anchors[i] : NULL;
}

/* ---- building ----------------------------------------------------------- */

/* An event's position, 1-based as in messages. */
static unsigned ev_line(const struct yev *ev)
{
	return ev->line + 1 > UINT32_MAX ? UINT32_MAX : (unsigned)ev->line + 1;
}

static unsigned ev_col(const struct yev *ev)
{
	return ev->col + 1 > UINT32_MAX ? UINT32_MAX : (unsigned)ev->col + 1;
}

/* A node with room for extra bytes of text right behind it (a scalar's:
 * the text is then read with the node, not from elsewhere in the arena). */
static struct ynode *node_new(struct loader *l, enum ynode_kind kind, const struct yev *ev,
			      size_t extra)
{
	struct ynode *n = extra > SIZE_MAX - sizeof(*n) ? NULL
							: vx_arena_alloc(l->arena, sizeof(*n) + extra);

	if (!n) {
		oom(l);
		return NULL;
	}
	memset(n, 0, sizeof(*n));
	n->kind = kind;
	n->file = l->file;
	n->line = ev_line(ev);
	n->col = ev_col(ev);
	if (ev->tag) {
		n->tag = vx_arena_strndup(l->arena, ev->tag, strlen(ev->tag));
		if (!n->tag) {
			oom(l);
			return NULL;
		}
	}
	return n;
}

/* Counts n nodes (n > 1: an alias standing for n nodes); refuses the file
 * past limits->max_nodes. */
static int count_nodes(struct loader *l, size_t n, unsigned line, unsigned col)
{
	if (n > l->lim->max_nodes || l->expanded > l->lim->max_nodes - n) {
		if (n > 1)
			report(l, line, col, "too many nodes: more than %zu with aliases expanded "
			       "(an alias bomb?)", l->lim->max_nodes);
		else
			report(l, line, col, "too many nodes: the file has more than %zu",
			       l->lim->max_nodes);
		l->fatal = 1;
		return VX_EINVAL;
	}
	l->expanded += n;
	return 0;
}

static const char *kind_words(const struct ynode *n)
{
	return n->kind == YNODE_MAP ? "a mapping" : "a sequence";
}

static int is_merge_key(const struct ynode *k);

/* Whether the next node is the value of a merge key "<<": its pairs are
 * lifted into the enclosing mapping, so it adds one level less. */
static int at_merge_value(const struct loader *l)
{
	const struct frame *f = l->nframes ? &l->frames[l->nframes - 1] : NULL;

	return f && f->node->kind == YNODE_MAP && (l->nkids - f->first) % 2 == 1 &&
	       is_merge_key(l->kids[l->nkids - 1]);
}

/* Puts a finished node (of the given height) into the open collection, or
 * makes it the document's root. */
static int add_child(struct loader *l, struct ynode *n, size_t height)
{
	struct frame *f = l->nframes ? &l->frames[l->nframes - 1] : NULL;

	if (height && at_merge_value(l))
		height--;
	if (f) {
		if (f->node->kind == YNODE_MAP && (l->nkids - f->first) % 2 == 0) {
			if (n->kind != YNODE_SCALAR)
				report(l, n->line, n->col,
				       "mapping keys must be scalars, not %s", kind_words(n));
			else if (n->style == YSTYLE_PLAIN && !strcmp(n->str, "<<") &&
				 (!n->tag || !strcmp(n->tag, TAG_MERGE)))
				f->has_merge = 1;
		}
		if (height > f->height)
			f->height = height;
	}
	if (VX_ALLOC_GROW(l->kids, l->nkids + 1, l->akids) < 0)
		return oom(l);
	l->kids[l->nkids++] = n;
	return 0;
}

static int is_merge_key(const struct ynode *k)
{
	return k->kind == YNODE_SCALAR && k->style == YSTYLE_PLAIN && !strcmp(k->str, "<<") &&
	       (!k->tag || !strcmp(k->tag, TAG_MERGE));
}

/* Mappings of at most this many pairs find a duplicate key by comparing
 * with each earlier key: most mappings are that small, and hashing every key
 * of every job into a table was more than the comparisons. */
#define SMALL_MAP 8

/* 1 with *prev set when out[0..np) has k's key, else 0. */
static int find_key(const struct ynode_pair *out, size_t np, const struct ynode *k, size_t *prev)
{
	for (size_t i = 0; i < np; i++)
		if (out[i].key->len == k->len && !memcmp(out[i].key->str, k->str, k->len)) {
			*prev = i;
			return 1;
		}
	return 0;
}

/* Adds k: v to out unless k is already there (reported when explicit_key).
 * small: out holds at most SMALL_MAP pairs, and keytab is not used. */
static int add_pair(struct loader *l, struct ynode_pair *out, size_t *np, struct ynode *k,
		    struct ynode *v, int explicit_key, int small)
{
	size_t prev = 0;
	int rc = small ? find_key(out, *np, k, &prev)
		       : vx_hashmap_add(&l->keytab, k->str, k->len, *np, &prev);

	if (rc < 0)
		return oom(l);
	if (rc == 1) {
		struct shown sh;

		if (explicit_key)
			report(l, k->line, k->col, "duplicate key \"%s\" (first at line %u)",
			       show(&sh, k->str, k->len), out[prev].key->line);
		return 0;
	}
	out[*np].key = k;
	out[*np].value = v;
	(*np)++;
	return 0;
}

/*
 * How many pairs the mapping kv (nkv nodes: key, value, ...) can have once
 * its merge keys are expanded, into *total. 0 when a merge key's value is
 * neither a mapping nor a sequence of mappings (reported).
 */
static int merged_total(struct loader *l, struct ynode **kv, size_t nkv, size_t *total)
{
	size_t i, j;

	for (i = 0; i < nkv; i += 2) {
		struct ynode *v = kv[i + 1];

		if (!is_merge_key(kv[i]))
			continue;
		if (v->kind == YNODE_MAP) {
			*total += v->n;
			continue;
		}
		if (v->kind == YNODE_SEQ) {
			for (j = 0; j < v->n; j++) {
				if (v->items[j]->kind != YNODE_MAP)
					break;
				*total += v->items[j]->n;
			}
			if (j == v->n)
				continue;
		}
		report(l, kv[i]->line, kv[i]->col,
		       "the value of a merge key \"<<\" must be a mapping or a sequence of mappings");
		return 0;
	}
	return 1;
}

/*
 * Adds the merged pairs to pairs (which holds the *np explicit ones, so they
 * win) and rebuilds the mapping in document order into *out: each merge
 * key's pairs appear where the merge key was. *np is then *out's length.
 */
static int merge_in_order(struct loader *l, struct ynode **kv, size_t nkv,
			  struct ynode_pair *pairs, size_t *np, size_t total,
			  struct ynode_pair **out)
{
	size_t nexp = *np, e = 0, nfinal = 0, j;
	struct ynode_pair *final = vx_arena_alloc(l->arena, (total ? total : 1) * sizeof(*final));
	int rc;

	if (!final)
		return oom(l);
	for (size_t i = 0; i < nkv; i += 2) {
		struct ynode *v = kv[i + 1];
		size_t nsrc, s;

		if (!is_merge_key(kv[i])) {
			/* Skip a duplicate (it was not added to 'pairs'). */
			if (e < nexp && pairs[e].key == kv[i])
				final[nfinal++] = pairs[e++];
			continue;
		}
		nsrc = v->kind == YNODE_MAP ? 1 : v->n;
		for (s = 0; s < nsrc; s++) {
			const struct ynode *src = v->kind == YNODE_MAP ? v : v->items[s];

			for (j = 0; j < src->n; j++) {
				size_t before = *np;

				rc = add_pair(l, pairs, np, src->pairs[j].key, src->pairs[j].value, 0, 0);
				if (rc < 0)
					return rc;
				if (*np > before)
					final[nfinal++] = pairs[*np - 1];
			}
		}
	}
	*out = final;
	*np = nfinal;
	return 0;
}

/* Builds the pairs of a closed mapping from kids[first..]: duplicate keys
 * are reported; YAML 1.1 merge keys ("<<: *base", "<<: [*a, *b]") are
 * expanded in place, explicit keys winning over merged ones and earlier
 * merged mappings over later ones. */
static int close_map(struct loader *l, struct frame *f)
{
	struct ynode **kv = l->kids ? l->kids + f->first : NULL;
	/* key, value, key, value ...; none while no node was ever kept (kids NULL) */
	size_t nkv = kv ? (l->nkids - f->first) & ~(size_t)1 : 0;
	size_t total = nkv / 2, i, np = 0;
	struct ynode_pair *pairs;
	int rc, small = !f->has_merge && nkv / 2 <= SMALL_MAP;

	for (i = 0; i < nkv; i += 2) {
		if (kv[i]->kind != YNODE_SCALAR)
			return 0; /* reported when the key was added; the file is refused */
	}
	if (f->has_merge && !merged_total(l, kv, nkv, &total))
		return 0;
	pairs = vx_arena_alloc(l->arena, (total ? total : 1) * sizeof(*pairs));
	if (!pairs)
		return oom(l);
	if (!small)
		vx_hashmap_clear(&l->keytab);
	/* Explicit keys first, so that they win over anything merged. */
	for (i = 0; i < nkv; i += 2) {
		if ((!f->has_merge || !is_merge_key(kv[i])) &&
		    (rc = add_pair(l, pairs, &np, kv[i], kv[i + 1], 1, small)) < 0)
			return rc;
	}
	if (f->has_merge && (rc = merge_in_order(l, kv, nkv, pairs, &np, total, &pairs)) < 0)
		return rc;
	f->node->pairs = pairs;
	f->node->n = np;
	return 0;
}

static int close_frame(struct loader *l)
{
	struct frame *f = &l->frames[l->nframes - 1];
	struct ynode *n = f->node;
	size_t height = f->height + 1, size = l->expanded - f->count_at_open;
	int rc = 0;

	if (n->kind == YNODE_MAP) {
		rc = close_map(l, f);
	} else {
		size_t cnt = l->nkids - f->first;

		n->items = vx_arena_alloc(l->arena, (cnt ? cnt : 1) * sizeof(*n->items));
		if (!n->items) {
			rc = oom(l);
		} else {
			if (cnt)
				memcpy(n->items, l->kids + f->first, cnt * sizeof(*n->items));
			n->n = cnt;
		}
	}
	l->nkids = f->first;
	if (rc == 0 && f->anchor)
		rc = anchor_set(l, f->anchor, n, size, height);
	free(f->anchor);
	f->anchor = NULL;
	l->nframes--;
	if (rc == 0)
		rc = add_child(l, n, height);
	return rc;
}

static int open_frame(struct loader *l, const struct yev *ev, enum ynode_kind kind)
{
	struct ynode *n;
	struct frame *f;

	if (l->nframes >= l->lim->max_depth) {
		report(l, ev_line(ev), ev_col(ev), "nesting deeper than %zu levels",
		       l->lim->max_depth);
		l->fatal = 1;
		return VX_EINVAL;
	}
	if (count_nodes(l, 1, ev_line(ev), ev_col(ev)) < 0)
		return VX_EINVAL;
	n = node_new(l, kind, ev, 0);
	if (!n)
		return VX_ENOMEM;
	if (VX_ALLOC_GROW(l->frames, l->nframes + 1, l->aframes) < 0)
		return oom(l);
	f = &l->frames[l->nframes];
	memset(f, 0, sizeof(*f));
	f->node = n;
	f->first = l->nkids;
	f->count_at_open = l->expanded - 1;
	if (ev->anchor) {
		f->anchor = strdup(ev->anchor);
		if (!f->anchor)
			return oom(l);
	}
	l->nframes++;
	return 0;
}

static int on_scalar(struct loader *l, const struct yev *ev)
{
	unsigned line = ev_line(ev), col = ev_col(ev);
	size_t len = ev->len;
	struct ynode *n;
	char *str;

	if (count_nodes(l, 1, line, col) < 0)
		return VX_EINVAL;
	n = len == SIZE_MAX ? NULL
			    : node_new(l, YNODE_SCALAR, ev, len + 1);
	if (!n)
		return len == SIZE_MAX ? oom(l) : VX_ENOMEM;
	str = (char *)(n + 1);
	if (len)
		memcpy(str, ev->str, len);
	str[len] = '\0';
	n->str = str;
	n->len = len;
	n->style = ev->quoted ? YSTYLE_QUOTED : YSTYLE_PLAIN;
	if (memchr(n->str, '\0', len))
		report(l, line, col, "string contains a NUL character (\\0)");
	if (ev->anchor && anchor_set(l, ev->anchor, n, 1, 0) < 0)
		return VX_ENOMEM;
	return add_child(l, n, 0);
}

static int on_alias(struct loader *l, const struct yev *ev)
{
	unsigned line = ev_line(ev), col = ev_col(ev);
	const char *name = ev->str;
	const struct anchor *a = anchor_get(l, name);
	struct shown sh;
	struct ynode *n;
	size_t i;

	if (!a) {
		for (i = 0; i < l->nframes; i++) {
			if (l->frames[i].anchor && !strcmp(l->frames[i].anchor, name))
				break;
		}
		if (i < l->nframes)
			report(l, line, col, "alias *%s refers to a node that contains it",
			       show(&sh, name, strlen(name)));
		else
			report(l, line, col, "undefined alias *%s", show(&sh, name, strlen(name)));
		/* A null in its place keeps the document's shape, so the
		 * errors that follow are still right. */
		if (count_nodes(l, 1, line, col) < 0)
			return VX_EINVAL;
		n = node_new(l, YNODE_SCALAR, ev, 0); /* an alias has no tag */
		if (!n)
			return VX_ENOMEM;
		n->str = "";
		return add_child(l, n, 0);
	}
	if (l->nframes + a->height - (a->height && at_merge_value(l)) > l->lim->max_depth) {
		report(l, line, col, "nesting deeper than %zu levels (through alias *%s)",
		       l->lim->max_depth, show(&sh, name, strlen(name)));
		l->fatal = 1;
		return VX_EINVAL;
	}
	if (count_nodes(l, a->size, line, col) < 0)
		return VX_EINVAL;
	return add_child(l, a->node, a->height);
}

static int on_document_end(struct loader *l)
{
	struct ynode *root = l->nkids ? l->kids[l->nkids - 1] : NULL;

	/* "---" followed by nothing: libyaml gives an empty plain scalar. */
	if (root && root->kind == YNODE_SCALAR && root->style == YSTYLE_PLAIN && !root->len &&
	    !root->tag)
		root = NULL;
	l->nkids = 0;
	if (VX_ALLOC_GROW(l->docs, l->ndocs + 1, l->adocs) < 0)
		return oom(l);
	l->docs[l->ndocs++] = root;
	return 0;
}

static int on_event(void *ctx, const struct yev *ev)
{
	struct loader *l = ctx;

	if (l->fatal)
		return VX_EINVAL;
	switch (ev->type) {
	case YEV_DOC_START:
		/* Anchors do not cross documents. */
		vx_hashmap_clear(&l->anchor_index);
		l->nanchors = 0;
		return 0;
	case YEV_DOC_END:
		return on_document_end(l);
	case YEV_SCALAR:
		return on_scalar(l, ev);
	case YEV_ALIAS:
		return on_alias(l, ev);
	case YEV_SEQ_START:
		return open_frame(l, ev, YNODE_SEQ);
	case YEV_MAP_START:
		return open_frame(l, ev, YNODE_MAP);
	case YEV_SEQ_END:
	case YEV_MAP_END:
		return l->nframes ? close_frame(l) : 0;
	case YEV_STREAM_START:
	case YEV_STREAM_END:
		return 0;
	}
	return 0;
}

/* libyaml's event as ours: the same fields, none of its types. */
static int from_libyaml(struct yev *out, const yaml_event_t *ev)
{
	memset(out, 0, sizeof(*out));
	out->line = ev->start_mark.line;
	out->col = ev->start_mark.column;
	switch (ev->type) {
	case YAML_STREAM_START_EVENT:
		out->type = YEV_STREAM_START;
		return 0;
	case YAML_STREAM_END_EVENT:
		out->type = YEV_STREAM_END;
		return 0;
	case YAML_DOCUMENT_START_EVENT:
		out->type = YEV_DOC_START;
		return 0;
	case YAML_DOCUMENT_END_EVENT:
		out->type = YEV_DOC_END;
		return 0;
	case YAML_SCALAR_EVENT:
		out->type = YEV_SCALAR;
		out->str = (const char *)ev->data.scalar.value;
		out->len = ev->data.scalar.length;
		out->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
		out->tag = (const char *)ev->data.scalar.tag;
		out->anchor = (const char *)ev->data.scalar.anchor;
		return 0;
	case YAML_ALIAS_EVENT:
		out->type = YEV_ALIAS;
		out->str = (const char *)ev->data.alias.anchor;
		out->len = out->str ? strlen(out->str) : 0;
		return 0;
	case YAML_SEQUENCE_START_EVENT:
		out->type = YEV_SEQ_START;
		out->tag = (const char *)ev->data.sequence_start.tag;
		out->anchor = (const char *)ev->data.sequence_start.anchor;
		return 0;
	case YAML_MAPPING_START_EVENT:
		out->type = YEV_MAP_START;
		out->tag = (const char *)ev->data.mapping_start.tag;
		out->anchor = (const char *)ev->data.mapping_start.anchor;
		return 0;
	case YAML_SEQUENCE_END_EVENT:
		out->type = YEV_SEQ_END;
		return 0;
	case YAML_MAPPING_END_EVENT:
		out->type = YEV_MAP_END;
		return 0;
	case YAML_NO_EVENT:
		break;
	}
	return -1;
}

static void loader_release(struct loader *l)
{
	size_t i;

	for (i = 0; i < l->nframes; i++)
		free(l->frames[i].anchor);
	free(l->frames);
	free(l->kids);
	free(l->docs);
	free(l->anchors);
	vx_hashmap_release(&l->anchor_index);
	vx_hashmap_release(&l->keytab);
}

static void report_too_big(struct vx_diags *diags, const char *name, size_t size, int exact,
			   size_t max)
{
	char words[64];
	int rc;

	size_words(words, sizeof(words), max);
	if (exact)
		rc = vx_diags_add(diags, name, 1, 1, "file is %zu bytes, larger than the %s limit",
				  size, words);
	else
		rc = vx_diags_add(diags, name, 1, 1, "file is larger than the %s limit", words);
	(void)rc; /* out of memory while reporting: the caller fails with VX_EINVAL anyway */
}

/*
 * Runs libyaml over l's bytes, building the documents event by event until
 * the stream ends, a parse error (reported) or a limit or out of memory
 * (l->fatal). 0, or VX_ENOMEM when the parser cannot start.
 */
static int parse_stream(struct loader *l, const char *name, struct vx_err *err)
{
	yaml_parser_t parser;

	if (!yaml_parser_initialize(&parser))
		return vx_err_set(err, VX_ENOMEM, "%s: cannot start the YAML parser", name);
	/* Force UTF-8: a UTF-16 byte-order mark is then an encoding error
	 * rather than a silent switch of encoding. */
	yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
	yaml_parser_set_input_string(&parser, (const unsigned char *)l->data, l->len);
	for (;;) {
		yaml_event_t ev;
		struct yev ours;
		int done;

		if (!yaml_parser_parse(&parser, &ev)) {
			report_parser_error(l, &parser);
			break;
		}
		done = ev.type == YAML_STREAM_END_EVENT;
		if (from_libyaml(&ours, &ev) == 0 && on_event(l, &ours) < 0)
			l->fatal = 1; /* a limit or out of memory, already reported */
		yaml_event_delete(&ev);
		if (done || l->fatal)
			break;
	}
	yaml_parser_delete(&parser);
	return 0;
}

/* ynode.h: the fast reader first (tests turn it off to compare). */
int ynode_fast_reader = 1;

/* load_once's answer when the fast reader gave up: read the file again
 * with libyaml (what it reported so far is dropped). */
#define LOAD_AGAIN 1

/*
 * One reading of data into *out: with yfast_parse() when fast, else with
 * libyaml. LOAD_AGAIN when fast and the file is not the fast reader's subset
 * or has anything to report (libyaml then reads it, and says it in its words).
 */
static int load_once(struct yfile **out, const char *name, const char *data, size_t len,
		     const struct ynode_limits *lim, struct vx_diags *diags, struct vx_err *err,
		     int fast)
{
	struct vx_diags quiet = VX_DIAGS_INIT;
	struct loader l;
	struct yfile *f = NULL;
	int rc = 0;

	memset(&l, 0, sizeof(l));
	l.lim = lim;
	l.diags = fast ? &quiet : diags;
	l.err = err;
	l.data = data;
	l.len = len;
	l.arena = calloc(1, sizeof(*l.arena));
	if (!l.arena) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", name);
		goto done;
	}
	f = vx_arena_alloc(l.arena, sizeof(*f));
	if (f) {
		memset(f, 0, sizeof(*f));
		f->path = vx_arena_strndup(l.arena, name, strlen(name));
	}
	if (!f || !f->path) {
		rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", name);
		goto done;
	}
	f->arena = l.arena;
	l.file = f->path;

	if (fast) {
		rc = yfast_parse(l.data, l.len, on_event, &l);
		if (rc == VX_ENOMEM && !l.oom)
			rc = oom(&l);
		if (l.oom) {
			rc = VX_ENOMEM;
			goto done;
		}
		if (rc != 0 || l.nerrors || l.fatal) {
			rc = LOAD_AGAIN;
			goto done;
		}
	} else if ((rc = parse_stream(&l, name, err)) < 0) {
		goto done;
	}
	if (l.oom) {
		rc = VX_ENOMEM;
		goto done;
	}
	if (l.nerrors) {
		rc = VX_EINVAL;
		goto done;
	}
	rc = 0;
	f->ndocs = l.ndocs;
	if (l.ndocs) {
		f->docs = vx_arena_alloc(l.arena, l.ndocs * sizeof(*f->docs));
		if (!f->docs) {
			rc = vx_err_set(err, VX_ENOMEM, "%s: out of memory", name);
			goto done;
		}
		memcpy(f->docs, l.docs, l.ndocs * sizeof(*f->docs));
	}
	*out = f;
	l.arena = NULL; /* now owned by *out */
done:
	loader_release(&l);
	arena_free(l.arena);
	vx_diags_release(&quiet);
	return rc;
}

int ynode_load_mem(struct yfile **out, const char *name, const char *data, size_t len,
		   const struct ynode_limits *limits, struct vx_diags *diags, struct vx_err *err)
{
	static const struct ynode_limits defaults = YNODE_LIMITS_DEFAULT;
	const struct ynode_limits *lim = limits ? limits : &defaults;
	int rc;

	*out = NULL;
	if (!data) {
		data = "";
		len = 0;
	}
	if (!name)
		name = "<input>";
	if (len > lim->max_file_bytes) {
		report_too_big(diags, name, len, 1, lim->max_file_bytes);
		return VX_EINVAL;
	}
	/* A UTF-8 byte-order mark (editors on Windows write one) is skipped, as
	 * PyYAML does. libyaml skips it only when it detects the encoding itself,
	 * which we do not let it do (below); and it must not reach libyaml, which
	 * would count it as a column and misread the indentation of line 1.
	 * Positions are then counted from the character after it, as editors do. */
	if (len >= 3 && !memcmp(data, "\xEF\xBB\xBF", 3)) {
		data += 3;
		len -= 3;
	}
	rc = load_once(out, name, data, len, lim, diags, err, ynode_fast_reader);
	if (rc == LOAD_AGAIN)
		rc = load_once(out, name, data, len, lim, diags, err, 0);
	return rc;
}

/* Reads at most max + 1 bytes of fd, so a file that is (or has grown) over
 * the limit is noticed without reading it whole. */
static int read_capped(int fd, size_t hint, size_t max, char **out, size_t *outlen)
{
	size_t alloc, len = 0;
	char *buf;

	if (max > SIZE_MAX / 4)
		max = SIZE_MAX / 4; /* so that max + 1 and doubling cannot overflow */
	alloc = hint < max ? hint + 1 : max + 1;

	if (alloc < 4096)
		alloc = max + 1 < 4096 ? max + 1 : 4096;
	buf = malloc(alloc + 1);
	if (!buf)
		return VX_ENOMEM;
	for (;;) {
		ssize_t n;

		if (len == alloc) {
			size_t na = alloc > (max + 1) / 2 ? max + 1 : alloc * 2;
			char *nb;

			if (na == alloc)
				break; /* max + 1 bytes read: too big */
			nb = realloc(buf, na + 1);
			if (!nb) {
				free(buf);
				return VX_ENOMEM;
			}
			buf = nb;
			alloc = na;
		}
		n = read(fd, buf + len, alloc - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			return VX_EIO;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*out = buf;
	*outlen = len;
	return 0;
}

int ynode_load_file(struct yfile **out, const char *path, const struct ynode_limits *limits,
		    struct vx_diags *diags, struct vx_err *err)
{
	static const struct ynode_limits defaults = YNODE_LIMITS_DEFAULT;
	const struct ynode_limits *lim = limits ? limits : &defaults;
	struct stat st;
	char *data = NULL;
	size_t len = 0;
	int fd = -1, rc;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = vx_err_set(err, VX_EIO, "reading %s: %s", path, strerror(errno));
		goto done;
	}
	if (fstat(fd, &st) < 0) {
		rc = vx_err_set(err, VX_EIO, "reading %s: %s", path, strerror(errno));
		goto done;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = vx_err_set(err, VX_EIO, "reading %s: %s", path, strerror(EISDIR));
		goto done;
	}
	/* Refuse a big file by its size, before reading any of it. */
	if (S_ISREG(st.st_mode) && st.st_size > 0 && (uintmax_t)st.st_size > lim->max_file_bytes) {
		report_too_big(diags, path, (size_t)st.st_size, 1, lim->max_file_bytes);
		rc = VX_EINVAL;
		goto done;
	}
	rc = read_capped(fd, S_ISREG(st.st_mode) ? (size_t)st.st_size : 0, lim->max_file_bytes,
			 &data, &len);
	if (rc == VX_ENOMEM) {
		rc = vx_err_set(err, VX_ENOMEM, "reading %s: out of memory", path);
		goto done;
	}
	if (rc < 0) {
		rc = vx_err_set(err, VX_EIO, "reading %s: %s", path, strerror(errno));
		goto done;
	}
	if (len > lim->max_file_bytes) {
		/* Not a regular file, or it grew after fstat. */
		report_too_big(diags, path, len, 0, lim->max_file_bytes);
		rc = VX_EINVAL;
		goto done;
	}
	rc = ynode_load_mem(out, path, data, len, lim, diags, err);
done:
	free(data);
	if (fd >= 0)
		close(fd);
	return rc;
}

void yfile_free(struct yfile *f)
{
	if (f)
		arena_free(f->arena);
}

/* ---- lookups -------------------------------------------------------------- */

/* The pair of map whose key is key, or NULL. */
static const struct ynode_pair *find_pair(const struct ynode *map, const char *key)
{
	size_t i, klen;

	if (!map || map->kind != YNODE_MAP || !key)
		return NULL;
	klen = strlen(key);
	for (i = 0; i < map->n; i++) {
		const struct ynode *k = map->pairs[i].key;

		if (k->len == klen && !memcmp(k->str, key, klen))
			return &map->pairs[i];
	}
	return NULL;
}

struct ynode *ynode_get_key(const struct ynode *map, const char *key)
{
	const struct ynode_pair *p = find_pair(map, key);

	return p ? p->key : NULL;
}

struct ynode *ynode_get(const struct ynode *map, const char *key)
{
	const struct ynode_pair *p = find_pair(map, key);

	return p ? p->value : NULL;
}

static int str_in(const char *s, const char *const *list)
{
	for (; *list; list++) {
		if (!strcmp(s, *list))
			return 1;
	}
	return 0;
}

int ynode_is_null(const struct ynode *n)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL", NULL };

	if (!n || n->kind != YNODE_SCALAR)
		return 0;
	if (n->tag)
		return !strcmp(n->tag, TAG_NULL);
	/* Every spelling of null starts so: most scalars are out at their first byte. */
	if (!strchr("~nN", n->str[0]) || n->len > 4)
		return 0;
	return n->style == YSTYLE_PLAIN && str_in(n->str, nulls);
}

static int all_digits(const char *s, const char *set)
{
	if (!*s)
		return 0;
	for (; *s; s++) {
		if (!strchr(set, *s))
			return 0;
	}
	return 1;
}

/* YAML 1.2 core schema integers: [-+]?[0-9]+, 0o[0-7]+, 0x[0-9a-fA-F]+. */
static int core_int(const char *s)
{
	if (s[0] == '0' && s[1] == 'o')
		return all_digits(s + 2, "01234567");
	if (s[0] == '0' && s[1] == 'x')
		return all_digits(s + 2, "0123456789abcdefABCDEF");
	if (*s == '-' || *s == '+')
		s++;
	return all_digits(s, "0123456789");
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? and the .inf/.nan forms. */
static int core_float(const char *s)
{
	static const char *const specials[] = { ".nan", ".NaN", ".NAN", NULL };
	static const char *const infs[] = { ".inf", ".Inf", ".INF", NULL };
	size_t before = 0, after = 0;

	if (str_in(s, specials))
		return 1;
	if (*s == '-' || *s == '+')
		s++;
	if (str_in(s, infs))
		return 1;
	while (*s >= '0' && *s <= '9') {
		s++;
		before++;
	}
	if (*s == '.') {
		s++;
		while (*s >= '0' && *s <= '9') {
			s++;
			after++;
		}
	}
	if (!before && !after)
		return 0;
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '-' || *s == '+')
			s++;
		if (!all_digits(s, "0123456789"))
			return 0;
		return 1;
	}
	return *s == '\0';
}

const char *ynode_type_name(const struct ynode *n)
{
	static const char *const bools[] = { "true", "True", "TRUE", "false", "False", "FALSE", NULL };

	if (!n)
		return "null";
	if (n->kind == YNODE_MAP)
		return "mapping";
	if (n->kind == YNODE_SEQ)
		return "sequence";
	if (n->tag) {
		if (!strcmp(n->tag, TAG_NULL))
			return "null";
		if (!strcmp(n->tag, TAG_BOOL))
			return "boolean";
		if (!strcmp(n->tag, TAG_INT))
			return "integer";
		if (!strcmp(n->tag, TAG_FLOAT))
			return "number";
		return "string";
	}
	if (n->style != YSTYLE_PLAIN)
		return "string";
	/*
	 * Only a null, a boolean or a number starts with one of these (and ""
	 * is null): every scalar is asked its type, most are names and paths,
	 * and matching them against each pattern in turn was a tenth of a load.
	 */
	if (!strchr("~nNtTfF0123456789+-.", n->str[0]))
		return "string";
	if (strlen(n->str) != n->len)
		return "string";
	/* No null or boolean is longer than "FALSE" (NVIDIA_L4 need not be
	 * compared with each of them). */
	if (n->len <= 5 && ynode_is_null(n))
		return "null";
	if (n->len <= 5 && str_in(n->str, bools))
		return "boolean";
	if (core_int(n->str))
		return "integer";
	if (core_float(n->str))
		return "number";
	return "string";
}

static void why_set(struct ynode_why *why, const char *fmt, ...) VX_PRINTF(2, 3);

static void why_set(struct ynode_why *why, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why->s, sizeof(why->s), fmt, ap);
	va_end(ap);
}

int ynode_want_string(struct ynode_why *why, const struct ynode *n)
{
	const char *t = ynode_type_name(n);
	struct shown sh;

	why->s[0] = '\0';
	if (!strcmp(t, "string"))
		return 0;
	if (!strcmp(t, "integer") || !strcmp(t, "number") || !strcmp(t, "boolean")) {
		/* YAML typed it; the fix is to quote it, as Kubernetes and gcloud
		 * (which send the typed value, and the API refuses it) would need too. */
		show(&sh, n->str, n->len);
		why_set(why, "expected a string, got the %s %s; quote it: \"%s\"",
			strcmp(t, "boolean") ? "number" : "boolean", sh.s, sh.s);
	} else if (!strcmp(t, "null")) {
		why_set(why, "expected a string, got null");
	} else {
		why_set(why, "expected a string, got a %s", t);
	}
	return VX_EINVAL;
}

/* [+-]?[0-9]+ and nothing else (strtoll alone would skip leading spaces). */
static int decimal_syntax(const char *s)
{
	if (*s == '+' || *s == '-')
		s++;
	return all_digits(s, "0123456789");
}

int ynode_int(int64_t *out, struct ynode_why *why, const struct ynode *n, int64_t min,
	      int64_t max)
{
	const char *t = ynode_type_name(n);
	struct shown sh;
	char *end = NULL;
	long long x;

	*out = 0;
	why->s[0] = '\0';
	if (n->kind != YNODE_SCALAR) {
		why_set(why, "expected an integer, got a %s", t);
		return VX_EINVAL;
	}
	show(&sh, n->str, n->len);
	if (!strcmp(t, "null")) {
		why_set(why, "expected an integer, got null");
		return VX_EINVAL;
	}
	if (!strcmp(t, "boolean")) {
		why_set(why, "expected an integer, got the boolean %s", sh.s);
		return VX_EINVAL;
	}
	if (n->len != strlen(n->str) || !decimal_syntax(n->str)) {
		/* 0x10 and 0o17 are integers to YAML, but a number vx sends is
		 * written in decimal: say which form is wanted. */
		why_set(why, "expected %s integer, got \"%s\"",
			core_int(n->str) ? "a decimal" : "an", sh.s);
		return VX_EINVAL;
	}
	errno = 0;
	x = strtoll(n->str, &end, 10);
	if (errno == ERANGE || x < min || x > max) {
		if (errno == ERANGE ? n->str[0] == '-' : x < min)
			why_set(why, "%s is out of range (at least %lld)", sh.s, (long long)min);
		else
			why_set(why, "%s is out of range (at most %lld)", sh.s, (long long)max);
		return VX_EINVAL;
	}
	*out = x;
	return 0;
}
