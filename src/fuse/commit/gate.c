/*
 * gate.c - where a change is admitted (commit.h: request -> ADMITTED,
 * invariants 1 and 4), and where a request that reads FILE marks its
 * reader section.
 *
 * commit_begin is the one "begin a change" block of the daemon: the
 * write-behind kinds the change may depend on flushed first (a barrier:
 * a rename after a create links the new file first; a removexattr after
 * a setfattr writes the value first), FILE's lock taken (node/hold.c:
 * EBUSY while another program holds it, ESTALE when it changed and the
 * mount does not follow, EIO once the mount is lost), the object
 * resolved in the current generation (a live FILE another program
 * changed is followed first), and refused with EROFS when it is another
 * file's (external links are shown read-only).
 * Tests: test_modify.py, test_xattr_write.py, test_lbatch.py,
 * test_xbatch.py, test_live_write.py.
 */
#include "commit.h"

#include <time.h>

/* The request thread's change section (commit_rd_change_begin) and how
 * many of its commit_begin hold FILE's lock: the section is paused from
 * the first to the last (a barrier's flush inside commit_begin nests) */
static __thread struct rd_change {
	h5fs *fs;
	struct rd *x;
	unsigned held;
} rd_mine;

static void locked(void)
{
	if (rd_mine.held++ == 0 && rd_mine.x)
		commit_rd_end(rd_mine.x);
}

static void unlocked(h5fs *fs)
{
	fs_write_end(fs);
	/* (reads after the lock, the answer's stat among them, are in a
	 * section again: it begins after the change's own frees) */
	if (--rd_mine.held == 0 && rd_mine.x)
		*rd_mine.x = commit_rd_begin(rd_mine.fs);
}

int commit_begin(struct use *u, h5fs *fs, struct node *n, unsigned barrier, const char *op)
{
	int err;

	if ((barrier & COMMIT_ALL) && (err = commit_barrier(fs, barrier & COMMIT_ALL)) != 0)
		return err;
	err = barrier & COMMIT_UNDO ? fs_write_begin_undo(fs) : fs_write_begin(fs);
	if (err)
		return err;
	locked();
	if (!n)
		return 0;       /* (COMMIT_FILE: the lock alone) */
	err = node_use_current(u, fs, n);
	if (!err && (u->addr == UINT64_MAX || u->f != fs->f)) {
		node_use_end(u);
		err = commit_admit(fs, PAGER_FOREIGN, op, n->path);
	}
	if (err)
		unlocked(fs);
	return err;
}

void commit_end(h5fs *fs, struct use *u, bool changed)
{
	if (u)
		node_use_end(u);
	if (changed)
		fs_meta_changed(fs);
	unlocked(fs);
}

/* Refusals for space are logged once a minute at most, with how many
 * were not: a program at the margin is refused at every write. */
#define NOSPC_LOG_EVERY 60

int commit_refuse(h5fs *fs, int rc, const char *op, const char *path, const char *name)
{
	int e = h5fs_errno(rc);
	struct timespec ts;
	int64_t last;
	uint64_t quiet = 0;

	if (e == ENOSPC) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		last = __atomic_load_n(&fs->nospc_at, __ATOMIC_RELAXED);
		if ((last && ts.tv_sec - last < NOSPC_LOG_EVERY) ||
		    !__atomic_compare_exchange_n(&fs->nospc_at, &last, (int64_t)ts.tv_sec, false, __ATOMIC_RELAXED,
						 __ATOMIC_RELAXED)) {
			__atomic_add_fetch(&fs->nospc_quiet, 1, __ATOMIC_RELAXED);
			h5_err_clear();
			return e;
		}
		quiet = __atomic_exchange_n(&fs->nospc_quiet, 0, __ATOMIC_RELAXED);
	}
	if (quiet)
		h5fs_log(fs, LOG_NOTICE, "%s %s%s%s: refused (%s) before its answer, as %llu more changes since: %s",
			 op, show_path(path), name ? "/" : "", name ? name : "", strerror(e),
			 (unsigned long long)quiet, h5_err_msg());
	else
		h5fs_log(fs, e == ENOSPC ? LOG_NOTICE : LOG_ERR, "%s %s%s%s: refused (%s) before its answer: %s", op,
			 show_path(path), name ? "/" : "", name ? name : "", strerror(e), h5_err_msg());
	h5_err_clear();
	return e;
}

/* Requests that read FILE are reader sections of the current generation's
 * FILE (engine h5_file_read_begin/end): space a commit frees meanwhile is
 * not reused under them (a listxattr walking a dense store that a setfattr
 * replaced; a read() whose extents are spliced after n->lk is dropped,
 * issue 56). */
/* this thread's READDIRPLUS section (commit_rd_batch_begin), fs NULL: none */
static __thread struct rd_batch {
	h5fs *fs;
	struct rd x;
} rd_batch;

struct rd commit_rd_begin(h5fs *fs)
{
	struct rd x = { NULL, 0 };

	/* (a mount that does not write frees nothing: no section, no cost) */
	if (!pager_writes(&fs->pg))
		return x;
	x.g = gen_current(fs);
	if (rd_batch.fs == fs && rd_batch.x.g == x.g && rd_batch.x.t) {
		/* inside this thread's section of the same generation */
		gen_release(x.g);
		x.g = NULL;
		return x;
	}
	x.t = h5_file_read_begin(x.g->f);
	return x;
}

void commit_rd_batch_begin(h5fs *fs)
{
	if (rd_batch.fs)
		return;         /* (one at a time; none nests) */
	rd_batch.x = commit_rd_begin(fs);
	rd_batch.fs = rd_batch.x.g ? fs : NULL;
}

void commit_rd_batch_end(h5fs *fs)
{
	if (rd_batch.fs != fs)
		return;
	rd_batch.fs = NULL;
	commit_rd_end(&rd_batch.x);
}

void commit_rd_end(struct rd *x)
{
	if (!x->g)
		return;
	h5_file_read_end(x->g->f, x->t);
	gen_release(x->g);
	x->g = NULL;
}

void commit_rd_change_begin(h5fs *fs, struct rd *x)
{
	/* (also a change of what is kept in memory to be written: an rmdir
	 * answered, a name not linked yet; node/hold.c fs_change_begin) */
	fs_change_begin(fs);
	*x = commit_rd_begin(fs);
	rd_mine = (struct rd_change){ fs, x, 0 };
}

void commit_rd_change_end(struct rd *x)
{
	h5fs *fs = rd_mine.fs;

	rd_mine = (struct rd_change){ NULL, NULL, 0 };
	commit_rd_end(x);
	fs_change_end(fs);
}
