/*
 * cindex.h - the persistent index of a collection (issue 25 item 4): per
 * HDF5 member of a collection, the tree a mount shows of it (every node's
 * name, parent, readdir position, stat fields, symlink target and xattrs
 * with their values), kept in an SQLite database so that a remount of an
 * unchanged collection answers lookups, getattr, readdir, readlink and
 * xattrs without opening the member.
 *
 * No FUSE and no engine in here (only h5core.h's error codes): the
 * collection daemon walks a member through the member root's own ops (so
 * the index can never disagree with a live mount), hands the result as a
 * cindex_tree to cindex_store, and later gets it back from cindex_load
 * when the member's key (size, mtime_ns, ETag, and the view) still
 * matches.
 *
 * Durability and sharing are SQLite's: a member's record is written in one
 * transaction (WAL journal: a kill -9 leaves the last committed state), and
 * several mounts of one collection share one file (WAL readers do not block
 * the writer; a busy timeout makes writers wait for each other). Each
 * record also carries a CRC of its content, checked when loaded, so that a
 * damaged page inside a record is a miss (re-read), never a wrong answer.
 * A file that is not such an index (not SQLite, another schema, truncated,
 * corrupt) is moved aside to PATH.bad and rebuilt, with one log line.
 *
 * Functions return 0 (or 1 where said) or a negative h5_err with a message
 * (h5_err_set). A cindex handle is safe to use from several threads.
 */
#ifndef H5FS_CINDEX_H
#define H5FS_CINDEX_H

#include <stddef.h>
#include <stdint.h>

/* Bumped whenever the tables or what a record means change: an index of
 * another version is rebuilt (moved aside), never misread. */
#define CINDEX_SCHEMA_VERSION 5        /* 2: the catalog (ccat.h) and its views; 3: h5fs-ls's
                                        * listings (cls.h), unreadable members' errors; 4: the
                                        * stamps of the files a record's tree reaches (related);
                                        * 5: error nodes (CINDEX_ERROR) */
/* The oldest version read as it is (then marked CINDEX_SCHEMA_VERSION, so
 * that an older h5fs moves it aside rather than misread what this one
 * writes): 4 has the same tables and no error nodes. */
#define CINDEX_SCHEMA_READABLE 4

/* CINDEX_ERROR: a name whose object could not be read when the member was
 * walked (its lookup gave EIO: a corrupt object header, say); it has no
 * stat, no xattrs, no children, and target holds why (the log line's
 * reason), so a remount answers EIO for it without opening the member. */
enum cindex_type { CINDEX_DIR = 0, CINDEX_FILE = 1, CINDEX_LINK = 2, CINDEX_ERROR = 3 };

/* The stat fields a mount reports of a node (uid and gid are the mount's,
 * not the member's, and are not kept). */
typedef struct cindex_stat {
	uint32_t mode;          /* type and permission bits (st_mode) */
	uint32_t nlink;
	uint32_t blksize;
	uint64_t size;
	uint64_t ino;           /* st_ino as the member root gives it */
	uint64_t blocks;
	int64_t atime_ns, mtime_ns, ctime_ns;
} cindex_stat;

typedef struct cindex_xattr {
	char *name;             /* exactly as listxattr gives it */
	void *value;            /* exactly as getxattr gives it */
	size_t len;
} cindex_xattr;

typedef struct cindex_node {
	uint32_t parent;        /* node index of the parent; the root (0) its own */
	uint32_t order;         /* readdir position among the parent's children */
	int type;               /* enum cindex_type */
	char *name;             /* "" for the root */
	char *path;             /* in the member: "/" for the root, "/g/ds" */
	char *target;           /* a symlink's readlink answer; an error node's
				 * reason; else NULL */
	cindex_stat st;
	/* The member root's own numbers, so that an indexed root answers as
	 * the live one did: lid the node id its lookup gave (files: st_ino;
	 * directories: one per path), dino what its parent's readdir gave.
	 * Set by the caller after cindex_tree_add (0 until then). */
	uint64_t lid, dino;
	cindex_xattr *xattrs;   /* in listxattr order */
	uint32_t nxattrs, xcap;
	/* set by cindex_tree_seal: children in kids[kid0 .. kid0+nkids) */
	uint32_t kid0, nkids;
} cindex_node;

/* A file other than the member whose objects the member's tree shows
 * (an external link's target, followed in place): the record holds only
 * while each such file is as it was when the member was walked, by the
 * member's own rule (size, mtime_ns, ETag) and its identity (ino). */
typedef struct cindex_related {
	char *path;             /* in the collection ("links/b.h5"), or absolute outside it */
	uint64_t size;
	int64_t mtime_ns;
	char *etag;             /* objects: the ETag; "" local files */
	uint64_t ino;           /* local files: the inode number; 0 objects */
} cindex_related;

/* A member's tree: node 0 is the member root. Built with cindex_tree_add
 * and cindex_tree_xattr, then sealed (children arrays and the name order
 * lookups search); cindex_load returns it sealed. */
typedef struct cindex_tree {
	cindex_node *nodes;
	uint32_t n, cap;
	uint32_t *kids;         /* per parent, the children in readdir order */
	uint32_t *byname;       /* per parent, the same children sorted by name */
	int sealed;
	cindex_related *related;        /* cindex_tree_related, in the order added */
	uint32_t nrelated, rcap;
} cindex_tree;

/* What a record is valid for. root: the collection's canonical path or URL;
 * member: the member's path in the collection; view: everything of the
 * mount that changes what a tree shows (xattr mode, umask, ...), as a
 * string the daemon builds; size, mtime_ns and etag (objects; NULL or ""
 * for local files): the member file as it was walked. */
typedef struct cindex_key {
	const char *root;
	const char *member;
	const char *view;
	uint64_t size;
	int64_t mtime_ns;
	const char *etag;
} cindex_key;

typedef struct cindex cindex;

/* Where notices go (a moved-aside file, a damaged record): one line each,
 * no trailing newline. */
typedef void (*cindex_log_fn)(void *arg, const char *msg);

/* The default index file of a collection: $XDG_CACHE_HOME/h5fs/ (or
 * ~/.cache/h5fs/) plus a name made of the canonical path's last component
 * and a hash of the whole path, so two collections never share one by
 * accident. *out is malloc'd. */
int cindex_default_path(char **out, const char *canonical);

/* Open (creating it and its folder when missing) the index at path. A file
 * that cannot serve as an index is moved aside and rebuilt, not an error;
 * errors are only what makes a fresh index impossible (an unwritable
 * folder, say): the caller then mounts without an index. */
int cindex_open(cindex **out, const char *path, cindex_log_fn log, void *log_arg);
void cindex_close(cindex *ix);
const char *cindex_path(const cindex *ix);

/* The record of k's member if its key matches: 0 and *out (sealed, to
 * free with cindex_tree_free), or 1 (no record, another size, mtime, ETag
 * or view, or a damaged record), or a negative h5_err (the caller treats
 * it as a miss). */
int cindex_load(cindex_tree **out, cindex *ix, const cindex_key *k);
/* Record t (sealed or not) for k, replacing any record of the same member
 * and view, in one transaction. */
int cindex_store(cindex *ix, const cindex_key *k, const cindex_tree *t);
/* Drop every record of a member (all views, and its kind): it is gone
 * from the collection. 0 also when there was none. */
int cindex_forget(cindex *ix, const char *root, const char *member);
/* What a file of the collection was found to be when its key (size,
 * mtime_ns, etag; not the view) was k's: 1 HDF5, 0 not, -1 unknown (never
 * seen, changed since, or no index). A listing of an indexed collection
 * then reads no file's signature. */
int cindex_kind(cindex *ix, const cindex_key *k);
int cindex_set_kind(cindex *ix, const cindex_key *k, int hdf5);
/* A member (signature) whose bytes could not be read as HDF5 at k's key:
 * remembered with why (the reason a remount logs without opening it);
 * cindex_unreadable answers 1 and *why (malloc'd) when k's key matches
 * such a record, else 0 (the caller opens the file). */
int cindex_set_unreadable(cindex *ix, const cindex_key *k, const char *why);
int cindex_unreadable(char **why, cindex *ix, const cindex_key *k);
/* The same for k[i], hdf5[i] (i < n), in one transaction. */
int cindex_set_kinds(cindex *ix, const cindex_key *k, const int *hdf5, size_t n);
/* A file row as cindex_prune reads it: the key its kind was said at. */
typedef struct cindex_file {
	uint64_t size;
	int64_t mtime_ns;
	const char *etag;       /* "" for none */
	int hdf5;               /* 1 HDF5, 0 not */
} cindex_file;
/* Drop the records of the files directly in folder (DIR-relative, "" for
 * the top; member paths are folder/name) for which present(arg, name, f)
 * says 0: they are gone from the collection (files removed from DIR
 * leave the index lazily, when their folder is listed). present sees
 * each file's row (valid during the call; ix is locked: it must not call
 * back into ix), so a listing learns every kind in one query. */
int cindex_prune(cindex *ix, const char *root, const char *folder,
		 int (*present)(void *arg, const char *name, const cindex_file *f), void *arg);
/* Every file row under root, in path order (a tool's walk of the whole
 * collection asks once instead of once per file): cb(arg, path, f),
 * valid during the call; ix is locked. */
int cindex_kinds(cindex *ix, const char *root, void (*cb)(void *arg, const char *path, const cindex_file *f),
		 void *arg);
/* How many members have a record under root (tests, tools). */
int cindex_count(uint64_t *out, cindex *ix, const char *root);

/* Building a tree. cindex_tree_add appends a node under parent (ignored
 * for the first node, the root) and gives its index in *out; children are
 * listed in the order they are added. Every string and value is copied. */
int cindex_tree_new(cindex_tree **out);
int cindex_tree_add(uint32_t *out, cindex_tree *t, uint32_t parent, const char *name,
		    const cindex_stat *st, const char *target);
/* An error node (CINDEX_ERROR) named name under parent: mode its type
 * bits as readdir gave them (S_IFMT; 0 unknown), dino its readdir number,
 * why the reason its lookup failed. */
int cindex_tree_add_error(uint32_t *out, cindex_tree *t, uint32_t parent, const char *name, uint32_t mode,
			  uint64_t dino, const char *why);
int cindex_tree_xattr(cindex_tree *t, uint32_t node, const char *name, const void *value, size_t len);
/* One more file the tree reaches, as r says (strings copied; etag NULL: ""). */
int cindex_tree_related(cindex_tree *t, const cindex_related *r);
int cindex_tree_seal(cindex_tree *t);
void cindex_tree_free(cindex_tree *t);

/* Queries of a sealed tree. lookup: the child of parent named name, or -1.
 * xattr: the node's xattr named name, or NULL. listxattr: the node's names,
 * each NUL-terminated, as listxattr gives them (*out malloc'd, NULL when
 * none). */
int64_t cindex_tree_lookup(const cindex_tree *t, uint32_t parent, const char *name);
const cindex_xattr *cindex_tree_getxattr(const cindex_tree *t, uint32_t node, const char *name);
int cindex_tree_listxattr(char **out, size_t *len, const cindex_tree *t, uint32_t node);

#endif
