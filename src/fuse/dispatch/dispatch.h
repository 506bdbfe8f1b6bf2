/*
 * dispatch.h - the mount: a table of roots (root.h) and the FUSE handlers
 * over it (dispatch.c), the member slots of a collection opened and
 * closed on demand (dispatch_slot.c), and the refused modifying
 * operations (dispatch/modify.c). Private to src/fuse.
 */
#ifndef H5FS_DISPATCH_H
#define H5FS_DISPATCH_H

#include "root.h"
#include "idmap.h"
#include "notify.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>

struct h5fs_mount;

/* A dispatcher handle, listed on its mount while open (slot_pin): the
 * kernel queues RELEASE and RELEASEDIR in the background, and an unmount
 * drops those not yet sent, so h5fs_mount_stop releases what is left. */
struct hnode {
	struct hnode *prev, *next;
	bool dir;
};

/* One root of the mount. Fixed roots (the single FILE, the folders of a
 * collection) are open for the mount's life; a member of a collection is
 * opened on first use and closed when idle, each opening a new epoch. */
struct slot {
	struct h5fs_mount *m;
	uint32_t idx;           /* in m->slots */
	const struct root_ops *ops;
	void *r;                /* NULL while closed */
	char *path;             /* members: the file's path in the collection */
	uint64_t folder_ino;    /* members: the folder root's id of it */
	uint64_t epoch;         /* openings so far */
	unsigned busy;          /* requests in it now (under m->mu) */
	unsigned pins;          /* open handles in it (under m->mu) */
	bool opening;           /* being opened or closed (under m->mu) */
	/* members: the root was closed because its file changed (root op
	 * changed): the watcher tells the kernel to drop what it holds of
	 * the member (inval), and the member's later openings are live
	 * files that changed (h5fs_set_changed: no page cache kept) */
	bool inval, changed;
	struct stat top;        /* members: the stat of its top (the file's) */
	double top_timeout;
	struct slot *next;      /* path hash chain */
	struct slot *onext, *oprev;     /* open members (m->open) */
};

/* A request's node: its slot (held) and local id. */
struct target {
	struct slot *s;
	uint64_t local;
};

/* What a collection lends the dispatcher (coll_mount.c). */
struct coll_hooks {
	/* open the member at path (DIR-relative) as a member root */
	int (*open_member)(void *coll, void **r, const char *path, struct slot *s);
	/* the DIR-relative path of the folder root's id, malloc'd */
	char *(*member_path)(void *coll, uint64_t folder_ino);
	/* descriptors held by the folder root now (plain files being read) */
	unsigned (*fds)(void *coll);
};

struct h5fs_mount {
	h5fs_config cfg;
	bool identity;          /* one fixed root, global = local */
	pthread_mutex_t mu;
	pthread_cond_t cv;      /* a slot opened or closed, or let go */
	unsigned waiters;       /* requests waiting on cv for room (room_locked) */
	pthread_cond_t stop_cv; /* the ticker: stop */
	struct slot **slots;
	size_t nslots, slots_cap;
	struct slot **by_path;
	size_t path_cap;
	unsigned inflight;      /* requests in some slot now */
	unsigned open_members;
	struct slot open;       /* sentinel of the open members, most recently used first */
	struct hnode *handles;  /* the open handles (slot_pin; under mu) */
	unsigned max_files;     /* descriptors on files under DIR (collections) */
	struct fuse_session *se;
	bool started;
	/* a collection's one watcher of its open members (-o refresh) */
	pthread_t ticker;
	bool ticking, stopping;
	struct idmap ids;       /* a collection's node ids */
	void *coll;
	const struct coll_hooks *hooks;
	void (*coll_free)(void *coll);
};

/* dispatch.c */
uint64_t dispatch_global(h5fs_mount *m, uint32_t slot, uint64_t local, uint64_t parent, const char *name,
			 bool made);
uint64_t dispatch_ino_out(void *ud, uint64_t local);
void reply_extents(fuse_req_t req, const h5_extent *ext, size_t n);

/* dispatch_slot.c */
int mount_new(h5fs_mount **out, const h5fs_config *cfg, bool identity);
/* room for one more descriptor under DIR (plain files): 0 or EMFILE;
 * wait: for other requests to let go of theirs a while (else idle
 * members are closed, but no request is waited for) */
int slots_reserve(h5fs_mount *m, bool wait);
/* The kernel refused a descriptor (EMFILE, ENFILE): the least recently
 * used idle member closed, 0; none idle: 0 once another request let go
 * of something within 0.1 s (in_request: a descriptor asked in the middle
 * of a request, 1.25 s) - try again - else EMFILE. m->mu not held. */
int slots_shed(h5fs_mount *m, bool in_request);
int slot_enter(h5fs_mount *m, struct slot *s);
void slot_leave(h5fs_mount *m, struct slot *s);
/* an open handle n in s: s stays open, n is listed until unpinned */
void slot_pin(h5fs_mount *m, struct slot *s, struct hnode *n);
void slot_unpin(h5fs_mount *m, struct slot *s, struct hnode *n);
struct slot *slot_if_open(h5fs_mount *m, uint64_t g, uint64_t *local);
int slot_member(struct target *t, h5fs_mount *m, uint64_t folder_ino, const struct stat *top, double timeout);
bool slot_top_attr(h5fs_mount *m, uint64_t g, struct stat *st, double *timeout);
int slot_add(struct slot **out, h5fs_mount *m, const struct root_ops *ops, void *r);
void slots_start(h5fs_mount *m);
void slots_usage(h5fs_mount *m, uint64_t *bytes, uint64_t *objects);
/* close idle members until the descriptors fit in max_files (m->mu held) */
void slots_trim_locked(h5fs_mount *m, unsigned want);
/* s used now: last in the order members are closed in (m->mu held) */
/* s is being opened (s->opening) and its member's file is not the one
 * its last opening had (a collection's hook: stamps): the kernel drops
 * what it holds of the member at the ticker's next look, as for a member
 * closed because it changed, and the opening is a live file that
 * changed. Takes m->mu. */
void slot_file_changed(h5fs_mount *m, struct slot *s);
/* A request's look for a change of s's member file (a live mount's
 * indexed member; at most once per refresh interval, by the root): may let
 * go of m->mu meanwhile and close s. m->mu held. */
void slot_check_changed_locked(h5fs_mount *m, struct slot *s);
void slot_touch_locked(h5fs_mount *m, struct slot *s);

/* dispatch/modify.c */
void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev);
void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
	       const char *newname, unsigned int flags);
void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname);
void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi);

#endif
