/* caller.c - the identity of the request being answered. The kernel
 * checks the modes the mount shows (default_permissions), but the bytes of
 * some datasets come from other files (external storage, a file reached by
 * an external link), opened by the daemon, which may be root: their own
 * modes are checked here for the user asking, at open (doc/h5fs.1
 * SECURITY). One request per thread at a time (libfuse's workers), so the
 * identity is the thread's. */
#include "caller.h"

#include <unistd.h>

#define CALLER_GROUPS 64

static __thread struct caller {
	bool set;
	uid_t uid;
	gid_t gid;
	int ngroups;
	gid_t groups[CALLER_GROUPS];
} cur;

void caller_begin(fuse_req_t req)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);

	cur.uid = c->uid;
	cur.gid = c->gid;
	/* the caller's supplementary groups (libfuse reads them from /proc);
	 * more than CALLER_GROUPS: the first ones */
	cur.ngroups = fuse_req_getgroups(req, CALLER_GROUPS, cur.groups);
	if (cur.ngroups < 0)
		cur.ngroups = 0;
	else if (cur.ngroups > CALLER_GROUPS)
		cur.ngroups = CALLER_GROUPS;
	cur.set = true;
}

void caller_end(void)
{
	cur.set = false;
}

static bool in_group(gid_t g)
{
	if (cur.gid == g)
		return true;
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
