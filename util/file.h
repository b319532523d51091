#ifndef VX_UTIL_FILE_H
#define VX_UTIL_FILE_H

#include <stddef.h>

#include "util/err.h"

/*
 * Puts len bytes of data at path whole or not at all: temporary file, fsync, then rename
 * over path (replace) or link to it (exclusive: VX_ECONFLICT when path
 * exists, so a killed writer never leaves a half-written file that blocks
 * the next), then fsync of the directory.
 */
int vx_file_put(const char *path, const void *data, size_t len, int exclusive, struct vx_err *err) VX_WUR;

#endif
