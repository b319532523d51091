#ifndef VX_RECONCILE_YFAST_H
#define VX_RECONCILE_YFAST_H

/*
 * The YAML reader's two event sources, as one event type: libyaml (the whole
 * language, in reconcile/load/ynode.c) and yfast_parse() (reconcile/load/yfast.c),
 * a reader of the plain subset that vx's own files are written in, about
 * ten times cheaper. reconcile/load/ynode.c builds its tree from these events
 * whichever source gave them, so a file reads the same either way.
 *
 * yfast_parse() accepts only what it can read exactly as libyaml does: block
 * mappings and sequences, one-line flow collections, one-line plain, single-
 * and double-quoted scalars (common escapes), comments and "---". Anything
 * else (anchors, aliases, tags, block scalars, multi-line scalars or flow
 * collections, tabs, CR, non-ASCII bytes, "...", directives, explicit keys,
 * and every syntax error) stops it with YFAST_OTHER, and the caller reads the
 * file again with libyaml, which reports errors in its own words. The unit
 * test (tests/unit/test_yaml.c) holds it to that: on every input it accepts,
 * its events are libyaml's.
 */

#include <stddef.h>

#include "util/err.h"

enum yev_type {
	YEV_STREAM_START = 1,
	YEV_STREAM_END,
	YEV_DOC_START,
	YEV_DOC_END,
	YEV_SCALAR,
	YEV_ALIAS,
	YEV_SEQ_START,
	YEV_SEQ_END,
	YEV_MAP_START,
	YEV_MAP_END,
};

/* One event. Strings are borrowed: valid only during the callback. */
struct yev {
	enum yev_type type;
	size_t line, col; /* 0-based; col counts characters */
	const char *str;  /* YEV_SCALAR: the value (len bytes, may hold NUL); YEV_ALIAS: the name */
	size_t len;
	int quoted;	    /* YEV_SCALAR: 0 plain, 1 single- or double-quoted, literal or folded */
	const char *tag;    /* YEV_SCALAR, YEV_SEQ_START, YEV_MAP_START: explicit tag or NULL */
	const char *anchor; /* the same: anchor name or NULL */
};

/* Called for each event in order; a negative return stops the reader, which
 * returns it. */
typedef int (*yev_fn)(void *ctx, const struct yev *ev);

#define YFAST_OTHER 1

/*
 * Reads data[0..len) (UTF-8 without a byte-order mark) and calls fn for each
 * event. 0 when the whole input was read; YFAST_OTHER when it is not the
 * subset (events already given must be thrown away); fn's negative return;
 * VX_ENOMEM.
 */
int yfast_parse(const char *data, size_t len, yev_fn fn, void *ctx) VX_WUR;

#endif
