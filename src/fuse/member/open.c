/* open.c - how a descriptor of a dataset is served: a write handle
 * (behind/write.c), or a read handle through the kernel's page cache
 * (keep_cache; on a live mount recorded by live/pcache.c; a dataset a
 * read-write mount appends to with behind/tail.c) or around it (direct_io:
 * a live FILE's rewritten datasets while old descriptors hold pages of
 * them, live/dio.c). */
#include "member.h"
#include "resize.h"
#include "handle.h"
#include "npystream.h"
#include "retype.h"
#include "caller.h"

/* Whether rows can be appended to n (its appends then drop what its
 * readers' pages hold of the old end, behind/tail.c); datasets whose bytes
 * can only be overwritten have their pages dropped after each commit
 * (behind/overwrite.c). */
static bool node_growable(struct node *n)
{
	bool g;

	pthread_rwlock_rdlock(&n->lk);
	g = n->type == NT_FILE && n->ds && h5_append_check(n->ds) == 0;
	pthread_rwlock_unlock(&n->lk);
	return g;
}

struct other_file {
	h5fs *fs;
	const struct node *n;
};

static int other_file_check(void *arg, const char *name, const struct stat *st)
{
	const struct other_file *o = arg;

	if (caller_may_read(st))
		return 0;
	h5fs_log(o->fs, LOG_NOTICE, "open %s: refused (EACCES): its bytes are read from %s, which the user "
		 "asking may not read", show_path(o->n->path), name);
	return EACCES;
}

static int open_node(h5fs *fs, struct node *n, struct fuse_file_info *fi);

/* Open descriptors are counted per node: an unlinked or replaced
 * dataset's storage is freed once none reads it (member/link.c
 * gone_keep) - counted from the start, so an unlink meanwhile
 * sees this one. An open that comes after such an unlink (the kernel's
 * lookup was before it: another process's unlink or rename over the
 * name in between) finds the storage freed and is ESTALE, on which the
 * kernel looks the name up again (open(2), truncate(2), stat(2) retry
 * once: O_CREAT then makes a new one, else ENOENT): it read and wrote
 * freed space that another object could take (test_procs: an O_DIRECT
 * write into a header reused since, EIO). */
int member_open(void *r, struct fuse_file_info *fi, uint64_t ino)
{
	h5fs *fs = r;
	struct node *n = node_get(fs, ino);
	int e;

	if (!n)
		return ESTALE;
	__atomic_add_fetch(&n->opens, 1, __ATOMIC_ACQ_REL);
	retype_open_wait(n);    /* (its bytes made a typed dataset meanwhile: gone) */
	e = n->type != NT_DIR && node_storage_gone(fs, n) ? ESTALE : open_node(fs, n, fi);
	if (e)
		gone_closed(fs, n);
	return e;
}

static int open_node(h5fs *fs, struct node *n, struct fuse_file_info *fi)
{
	int e;

	e = node_fresh(fs, n);   /* a live FILE may have lost it */
	if (e)
		return e;
	if (n->type == NT_DIR)
		return EISDIR;
	e = node_ds_need(fs, n);     /* let go after its lookup (node.c) */
	if (e)
		return e;
	/* Bytes of other files (external storage, a file an external link
	 * led to) go only to a user who could read those files: the kernel
	 * checked the modes shown, which are FILE's (doc/h5fs.1 SECURITY) */
	if (n->type == NT_FILE) {
		struct other_file o = { fs, n };

		/* the node's dataset, which a live FILE's sweep swaps under
		 * n->lk (fresh.c node_swap) and closes after */
		pthread_rwlock_rdlock(&n->lk);
		e = n->ds ? h5_dataset_each_file(n->ds, other_file_check, &o) : 0;
		pthread_rwlock_unlock(&n->lk);
		if (e)
			return e;
	}
	/* Writing means appending rows (wfile_open). */
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))
		return wfile_open(fs, n, fi);
	/* A dataset that can grow (owner's write bit on a read-write mount,
	 * wfile_open) is read through the page cache too (memmap): what
	 * its appends change there is dropped as they are accepted, and rows
	 * not committed yet are answered from behind/tail.c. Anything else
	 * cannot change while mounted (but a live FILE, live/live.c; and
	 * overwrites, behind/overwrite.c), so the page cache stays valid
	 * across opens. */
	if (pager_writes(&fs->pg) && (n->st.st_mode & S_IWUSR) && node_growable(n)) {
		if (wfile_reader_cached(fs, n))
			fi->keep_cache = 1;
		else
			fi->direct_io = 1;
	} else if (fs->live && !pager_writes(&fs->pg)) {
		/* the page cache, before and after FILE changes (memmap): what
		 * the kernel caches of it is recorded once reads are checked
		 * (live/pcache.c) */
		bool fresh;

		e = pcache_open(fs, n, &fresh);
		if (e == EBUSY) {
			/* descriptors holding pages of a rewritten version are
			 * still open: this one reads around them (live/dio.c) */
			struct dio_ledger *d = dio_new();

			if (!d)
				return ENOMEM;
			fi->direct_io = 1;
			fi->fh = (uint64_t)(uintptr_t)d | H5FS_FH_DIO;
			return 0;
		}
		if (e)
			return e;
		fi->keep_cache = !fresh;
		fi->fh = H5FS_FH_CACHED;
	} else {
		/* (a read-write mount's: its own overwrites keep the page
		 * cache right by behind/overwrite.c's rules, and no ledger
		 * records them; another program's change drops every page at
		 * the sweep, live/watch.c, as at a live FILE's first change) */
		fi->keep_cache = 1;
	}
	return 0;
}

int member_release(void *r, uint64_t ino, struct fuse_file_info *fi)
{
	struct node *n;

	if (wfile_of(fi))   /* write handles (wfile_open) */
		wfile_release(r, wfile_of(fi), ino);
	/* a reference of our own while we use it: the kernel's FORGET of the
	 * inode may come on another thread meanwhile (RELEASE is sent
	 * asynchronously), and node_unref would free it under retype_closed
	 * (ASan: a use after free in test_rename_keep under load) */
	n = node_ref_existing(r, ino);
	if (n && fi->fh == H5FS_FH_CACHED)
		pcache_close(n);
	dio_free(fh_dio(fi->fh));
	if (n)
		gone_closed(r, n);
	/* a type set back while it was open (tar --xattrs, cp -a, rsync -X),
	 * made at its last close */
	if (n)
		retype_closed(r, n);
	if (n)
		node_unref(r, ino, 1);
	return 0;
}
