/* caller.c - the identity of the request being answered. The kernel
 * checks the modes the mount shows (default_permissions), but the bytes of
 * some datasets come from other files (external storage, a file reached by
 * an external link), opened by the daemon, which may be root: their own
 * modes are checked here for the user asking, at open (doc/h5fs.1
 * SECURITY). One request per thread at a time (libfuse's workers), so the
 * identity is the thread's. */
#include "caller.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CALLER_GROUPS 64

static __thread struct caller {
	bool set;
	bool have_groups;       /* groups read (only when a check needs them) */
	uid_t uid;
	gid_t gid;
	pid_t pid;
	int ngroups;
	gid_t groups[CALLER_GROUPS];
} cur;

void caller_begin(fuse_req_t req)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);

	cur.uid = c->uid;
	cur.gid = c->gid;
	cur.pid = c->pid;
	cur.have_groups = false;
	cur.ngroups = 0;
	cur.set = true;
}

void caller_end(void)
{
	cur.set = false;
}

/* The caller's supplementary groups, from its /proc status ("Groups:"
 * line; more than CALLER_GROUPS: the first ones). Not libfuse's
 * fuse_req_getgroups: it searches its 4 KiB read without a terminating
 * NUL (AddressSanitizer: a heap overflow on a long status). A caller gone
 * meanwhile has none. */
static void read_groups(void)
{
	char path[64], buf[16384], *p;
	ssize_t n = 0, r;
	int fd;

	cur.have_groups = true;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)cur.pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	while (n < (ssize_t)sizeof(buf) - 1 && (r = read(fd, buf + n, sizeof(buf) - 1 - (size_t)n)) > 0)
		n += r;
	close(fd);
	buf[n] = 0;
	p = strstr(buf, "\nGroups:");
	if (!p)
		return;
	p += 8;
	while (cur.ngroups < CALLER_GROUPS) {
		char *end;
		unsigned long g;

		while (*p == ' ' || *p == '\t')
			p++;
		if (*p < '0' || *p > '9')
			break;
		g = strtoul(p, &end, 10);
		cur.groups[cur.ngroups++] = (gid_t)g;
		p = end;
	}
}

static bool in_group(gid_t g)
{
	if (cur.gid == g)
		return true;
	if (!cur.have_groups)
		read_groups();
	for (int i = 0; i < cur.ngroups; i++)
		if (cur.groups[i] == g)
			return true;
	return false;
}
bool caller_may_read(const struct stat *st)
{
	if (!cur.set || cur.uid == 0)
		return true;
	if (st->st_uid == cur.uid)
		return (st->st_mode & S_IRUSR) != 0;
	if (in_group(st->st_gid))
		return (st->st_mode & S_IRGRP) != 0;
	return (st->st_mode & S_IROTH) != 0;
}
