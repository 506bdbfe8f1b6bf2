/*
 * admit.c - a request admitted or refused before its answer (commit.h,
 * request -> ADMITTED): the pager's admission table (state/pager.c,
 * operation x state) read under wmu, and one log line per refusal
 * naming the request and why. Every write refusal of a single-file
 * mount that depends on the mount and not on the object's own storage
 * is decided here: the read-only mount, the lost mount, another file's
 * object, a view. What an object's storage cannot hold is refused by the
 * engine's reserve before the answer (commit_refuse, gate.c).
 */
#include "commit.h"

int commit_admit(h5fs *fs, enum pager_op op, const char *what, const char *path)
{
	unsigned state;
	int e;

	pthread_mutex_lock(&fs->wmu);
	state = fs->pg.state;
	e = pager_admit(&fs->pg, op);
	pthread_mutex_unlock(&fs->wmu);
	if (e)
		h5fs_log(fs, e == EIO ? LOG_ERR : LOG_NOTICE, "%s %s: %s: %s", what, path ? show_path(path) : "",
			 strerror(e), pager_refusal(op, state));
	return e;
}
