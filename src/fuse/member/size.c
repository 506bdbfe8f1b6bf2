/* size.c - fallocate(2) (root_member.c's table: sparse growth, and
 * PUNCH_HOLE through behind/overwrite.c ow_punch). Each is one change
 * between commit_begin and commit_end (commit/gate.c), after the rows
 * the node's write handles hold were committed (behind/wclose.c
 * wfile_commit_node: they come first); the size itself is set by
 * behind/truncate.c (through wclose.c trunc_set_size: truncate(2), a
 * write past the end, fallocate's growth; sparse growth, the fill value,
 * emptying).
 * Tests: test_truncate.py, test_long_runs.py, test_fsx.py. */
#include "member.h"
#include "resize.h"
#include "handle.h"

#include <linux/falloc.h>       /* FALLOC_FL_* */

/* fallocate(PUNCH_HOLE | KEEP_SIZE) of [off, off + len) cut to the
 * dataset's size (issue 65): the rows of other descriptors committed, the
 * writes answered before it applied and the handles' bytes kept over the
 * range committed (pending.c), then the punch (overwrite.c ow_punch); the
 * kernel wrote its dirty pages of the range back before asking, and
 * drops its cached ones after our answer. */
static int punch(h5fs *fs, struct node *n, uint64_t ino, uint64_t off, uint64_t len, uint64_t size)
{
	struct pending *p;
	struct use u;
	int e;

	if (off >= size)
		return 0;
	if (len > size - off)
		len = size - off;
	e = commit_admit(fs, PAGER_CHANGE, "fallocate", n->path);
	if (e)
		return e;
	e = node_ds_need(fs, n);
	if (e)
		return e;
	wfile_commit_node(fs, n);
	e = commit_begin(&u, fs, n, COMMIT_ATTRS, "fallocate");
	if (e)
		return e;
	p = pending_begin(fs, n);
	e = pending_commit_over(fs, n, ino, off, len);
	if (!e)
		e = ow_punch(fs, n, &u, ino, off, len);
	pending_end(fs, n, p);
	ow_pages_settle(fs, n, ino);
	commit_end(fs, &u, true);
	return e;
}

int member_fallocate(void *r, uint64_t ino, int mode, uint64_t off, uint64_t len)
{
	h5fs *fs = r;
	struct node *n = node_get(fs, ino);
	struct stat cur;
	double timeout;
	int e;

	if (!n)
		return ESTALE;
	if (n->type != NT_FILE || n->vkind)
		return EOPNOTSUPP;
	e = member_getattr(r, &cur, &timeout, ino);   /* (not a view: no view state to refresh) */
	if (e)
		return e;
	if (mode == (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE))
		return punch(fs, n, ino, off, len, (uint64_t)cur.st_size);
	if (mode != 0)
		return EOPNOTSUPP;
	/* inside the dataset: its storage is there, or is the fill value
	 * until written (space for it is reserved by that write) */
	if (off + len <= (uint64_t)cur.st_size)
		return 0;
	e = commit_admit(fs, PAGER_CHANGE, "fallocate", n->path);
	if (e)
		return e;
	e = trunc_set_size(fs, n, off + len, "fallocate");
	/* a dataset that cannot grow: the range does not fit (as truncate
	 * past a fixed end gives EPERM, fallocate gives what a full file
	 * system of that size would) */
	return e == EPERM ? EFBIG : e;
}
