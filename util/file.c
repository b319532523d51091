/* Files written whole or not at all: see file.h. */
#include "util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/banned.h"

static int write_all(int fd, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, data, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		data += w;
		len -= (size_t)w;
	}
	return 0;
}

static int fsync_dir(const char *path)
{
	char *dir = vx_strdup(path), *slash;
	int fd, rc = 0;

	if (!dir)
		return -1;
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	fd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		rc = fsync(fd);
		close(fd);
	}
	free(dir);
	return rc;
}

int vx_file_put(const char *path, const void *data, size_t len, int exclusive, struct vx_err *err)
{
	char *tmp = vx_asprintf("%s.tmp.%ld", path, (long)getpid());
	int fd = -1, rc = 0;

	if (!tmp)
		return vx_err_set(err, VX_ENOMEM, "out of memory");
	unlink(tmp); /* a leftover of a crashed earlier run of this pid */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = vx_err_set(err, VX_EIO, "writing %s: %s", path, strerror(errno));
		goto done;
	}
	if (write_all(fd, (const char *)data, len) < 0 || fsync(fd) < 0) {
		rc = vx_err_set(err, VX_EIO, "%s: %s", tmp, strerror(errno));
		goto done;
	}
	if (close(fd) < 0) {
		fd = -1;
		rc = vx_err_set(err, VX_EIO, "%s: %s", tmp, strerror(errno));
		goto done;
	}
	fd = -1;
	if (exclusive && link(tmp, path) < 0) {
		rc = errno == EEXIST ? vx_err_set(err, VX_ECONFLICT, "%s appeared meanwhile", path)
				     : vx_err_set(err, VX_EIO, "linking %s to %s: %s", tmp, path,
						  strerror(errno));
		goto done;
	}
	if (exclusive) {
		unlink(tmp);
	} else if (rename(tmp, path) < 0) {
		rc = vx_err_set(err, VX_EIO, "renaming %s to %s: %s", tmp, path, strerror(errno));
		goto done;
	}
	if (fsync_dir(path) < 0)
		rc = vx_err_set(err, VX_EIO, "syncing the directory of %s: %s", path,
				strerror(errno));
done:
	if (fd >= 0)
		close(fd);
	if (rc < 0)
		unlink(tmp);
	free(tmp);
	return rc;
}
