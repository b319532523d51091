/*
 * vx's writer lock around ref updates: see git_reflock.h.
 */
#include "state/git_reflock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <git2.h>

#include "util/buf.h"
#include "util/ctx.h"
#include "util/banned.h"

#define POLL_MS 100
#define RECORD_MAX 1024

/* The identity of a process, as the record holds it. */
struct who {
	long long pid;
	char host[256];
	char boot[64];
	unsigned long long start; /* clock ticks after boot; 0 = unknown */
	char ref[512];
};

static void this_host(char *out, size_t n)
{
	if (gethostname(out, n) != 0 || !*out)
		snprintf(out, n, "localhost");
	out[n - 1] = '\0';
}

/* Linux's id of this boot; "" where there is none. */
static void boot_id(char out[64])
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

	out[0] = '\0';
	if (!f)
		return;
	if (!fgets(out, 64, f))
		out[0] = '\0';
	out[strcspn(out, "\n")] = '\0';
	fclose(f);
}

/* When process pid started, in clock ticks after boot (proc(5), field 22); 0 when unknown. */
static unsigned long long start_time(long long pid)
{
	char path[64], buf[1024];
	const char *p;
	size_t n;
	FILE *f;
	unsigned long long v = 0;

	snprintf(path, sizeof(path), "/proc/%lld/stat", pid);
	if (!(f = fopen(path, "re")))
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The command name (field 2) may hold spaces and parentheses: count after the last ')'. */
	if (!(p = strrchr(buf, ')')))
		return 0;
	for (int field = 2; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	while (*p >= '0' && *p <= '9')
		v = v * 10 + (unsigned long long)(*p++ - '0');
	return v;
}

int git_reflock_process_dead(long long pid, const char *host, const char *boot,
			     unsigned long long start)
{
	char me[256], b[64];
	unsigned long long now;

	if (pid <= 0 || pid > INT_MAX || !host)
		return 0;
	this_host(me, sizeof(me));
	if (strcmp(me, host) != 0)
		return 0; /* another machine's process: nothing here can tell */
	boot_id(b);
	if (*b && boot && *boot && strcmp(b, boot) != 0)
		return 1; /* this machine has restarted since */
	if (kill((pid_t)pid, 0) == -1 && errno == ESRCH)
		return 1;
	/* The pid is in use: by the same process only if it started at the same time. */
	now = start_time(pid);
	return start && now && now != start;
}

/* The value after "key=" in line, up to a space, into out; 0 when found. */
static int field(const char *line, const char *key, char *out, size_t n)
{
	size_t k = strlen(key), len;
	const char *p = line;

	for (; p && *p; p = strchr(p, ' '), p = p ? p + 1 : NULL) {
		if (strncmp(p, key, k) != 0 || p[k] != '=')
			continue;
		p += k + 1;
		len = strcspn(p, " \n");
		if (len >= n)
			return -1;
		memcpy(out, p, len);
		out[len] = '\0';
		return 0;
	}
	return -1;
}

/* Parses a record; 0 when it names a process and a ref. */
static int parse(const char *line, struct who *w)
{
	char num[32], *end;

	memset(w, 0, sizeof(*w));
	if (field(line, "pid", num, sizeof(num)) < 0)
		return -1;
	errno = 0;
	w->pid = strtoll(num, &end, 10);
	if (errno || *end || w->pid <= 0)
		return -1;
	if (field(line, "start", num, sizeof(num)) == 0) {
		w->start = strtoull(num, &end, 10);
		if (errno || *end)
			w->start = 0;
	}
	if (field(line, "boot", w->boot, sizeof(w->boot)) < 0)
		w->boot[0] = '\0';
	return field(line, "host", w->host, sizeof(w->host)) < 0 ||
	       field(line, "ref", w->ref, sizeof(w->ref)) < 0 ? -1 : 0;
}

/* What fd holds, as a string the caller frees ("" when empty); NULL on error. */
static char *read_record(int fd)
{
	char buf[RECORD_MAX + 1];
	ssize_t n = pread(fd, buf, RECORD_MAX, 0);

	if (n < 0)
		return NULL;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return vx_strdup(buf);
}

static char *describe(const struct who *w)
{
	return vx_asprintf("vx (pid %lld on %s) updating %s", w->pid, w->host, w->ref);
}

/* Another vx held the flock for all of the wait: say who, from its record. */
static void say_busy(struct git_reflock *l, int64_t waited)
{
	char *rec = read_record(l->fd), *who = NULL;
	struct who w;

	if (rec && parse(rec, &w) == 0)
		who = describe(&w);
	l->busy = vx_asprintf("%s has not finished after %lld s: it is alive, perhaps paused "
			      "(stopped, suspended), and vx never takes a ref lock over from a "
			      "live process; let it finish, or end it, and try again",
			      who ? who : "another vx process", (long long)(waited / 1000));
	free(who);
	free(rec);
}

/* Under the flock: a record left means its writer died mid-update. */
static void note_left(struct git_reflock *l)
{
	char *rec = read_record(l->fd);
	struct who w;

	int valid = 0;

	/* The ref becomes a path to remove: only a ref name, never "../x". */
	if (rec && *rec && parse(rec, &w) == 0 && !strncmp(w.ref, "refs/", 5) &&
	    git_reference_name_is_valid(&valid, w.ref) == 0 && valid &&
	    git_reflock_process_dead(w.pid, w.host, w.boot, w.start)) {
		l->left = describe(&w);
		l->left_ref = vx_strdup(w.ref);
	}
	free(rec);
}

static void write_record(struct git_reflock *l, const char *ref)
{
	char host[256], boot[64];
	long long pid = (long long)getpid();
	char *rec;

	this_host(host, sizeof(host));
	boot_id(boot);
	rec = vx_asprintf("pid=%lld host=%s boot=%s start=%llu ref=%s\n", pid, host,
			  *boot ? boot : "-", start_time(pid), ref);
	/* Best effort: without a record a crash leaves a lock only age can clear. */
	if (rec && ftruncate(l->fd, 0) == 0 &&
	    pwrite(l->fd, rec, strlen(rec), 0) != (ssize_t)strlen(rec) && ftruncate(l->fd, 0) != 0)
		errno = 0;
	free(rec);
}

int git_reflock_take(struct git_reflock *l, const struct vx_ctx *ctx, const char *commondir,
		     const char *ref, int64_t wait_ms, int64_t *waited_ms)
{
	char *path = vx_asprintf("%svx-ref-writer", commondir);

	l->fd = path ? open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666) : -1;
	free(path);
	if (l->fd < 0)
		return 0; /* a read-only repository, say: libgit2 will tell */
	for (;;) {
		if (flock(l->fd, LOCK_EX | LOCK_NB) == 0)
			break;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return 0; /* no flock on this file system: nothing to prove with */
		if (*waited_ms >= wait_ms) {
			say_busy(l, *waited_ms);
			return -1;
		}
		vx_sleep_ms(ctx, POLL_MS);
		*waited_ms += POLL_MS;
	}
	l->locked = 1;
	note_left(l);
	write_record(l, ref);
	return 0;
}

int git_reflock_left_by_dead(const struct git_reflock *l, const char **ref, const char **who)
{
	if (!l->locked || !l->left || !l->left_ref)
		return 0;
	*ref = l->left_ref;
	*who = l->left;
	return 1;
}

void git_reflock_release(struct git_reflock *l)
{
	if (l->fd >= 0) {
		/* Cleared before the flock goes: a record never outlives a finished update. */
		if (l->locked && ftruncate(l->fd, 0) != 0)
			errno = 0;
		close(l->fd); /* drops the flock */
	}
	free(l->left);
	free(l->left_ref);
	free(l->busy);
	*l = (struct git_reflock)GIT_REFLOCK_INIT;
}
