/*
 * admit.c - a request admitted or refused before its answer (commit.h,
 * request -> ADMITTED), one path for every write refusal of a single-file
 * mount: the pager's admission table (state/pager.c, operation x state:
 * the read-only mount, the lost mount, another file's object, a view)
 * read under wmu, then the kind whose storage is to hold the change
 * (its admit callback, registered with the mount: sched.c) - names a
 * group's storage cannot take (behind/lbatch.c), a write descriptor's
 * bytes past what its dataset holds, another descriptor's partial row,
 * FILE's lock, the disk space its answer promises (behind/wfile.c). A
 * table refusal is logged here, naming the request and why; a kind's by
 * the kind, which knows why.
 */
#include "commit.h"

int commit_ask(h5fs *fs, const struct commit_ask *q)
{
	const struct commit_kind *k;
	unsigned state;
	int e;

	pthread_mutex_lock(&fs->wmu);
	state = fs->pg.state;
	e = pager_admit(&fs->pg, q->op);
	pthread_mutex_unlock(&fs->wmu);
	if (e) {
		h5fs_log(fs, e == EIO ? LOG_ERR : LOG_NOTICE, "%s %s: %s: %s", q->what,
			 q->path ? show_path(q->path) : "", strerror(e), pager_refusal(q->op, state));
		return e;
	}
	if (q->kind && (k = commit_kind_of(fs, q->kind)) != NULL && k->admit)
		e = k->admit(fs, q);
	return e;
}

int commit_admit(h5fs *fs, enum pager_op op, const char *what, const char *path)
{
	return commit_ask(fs, &(struct commit_ask){ .op = op, .what = what, .path = path });
}
