/*
 * notify.h - the one thread that tells the kernel what to drop (FUSE
 * notifications: inval_inode, inval_entry).
 *
 * A notification waits in the kernel for the locks of the inode it names
 * (page locks, the inode's): issued from inside a request handler it
 * deadlocks when the kernel holds them for that very request (xfstests
 * generic/029 and 030: a setattr truncating a mapped file waited for its
 * reply while the daemon's thread waited in
 * fuse_reverse_inval_inode -> invalidate_inode_pages2_range). So no
 * thread but this one issues them: handlers, the watcher and the commit
 * threads queue them (notify_inode, notify_entry never block on the
 * kernel) and one thread drains the queue in order.
 *
 * A LOOKUP or READDIR reply built from a FILE's old generation and written
 * after the kernel was told to drop that generation's entries would stay
 * cached for the whole entry timeout. Requests whose replies carry
 * entries are therefore counted (notify_reply_begin/end), and before each
 * batch the thread waits until every such request begun before the batch
 * was queued has been answered (an epoch flip, as RCU's grace period): a
 * live mount can then give the kernel long timeouts and invalidate
 * exactly what changed (live/live.c).
 *
 * One per daemon (one session): started by main once it is mounted and daemonized (a thread does not survive fuse_daemonize's fork),
 * stopped before it is destroyed. Before notify_start and after
 * notify_stop, notifications are dropped (nothing is mounted to tell).
 */
#ifndef H5FS_NOTIFY_H
#define H5FS_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct fuse_session;

/* 0 or an errno (the thread could not start: notifications are then dropped,
 * logged by the caller) */
int notify_start(struct fuse_session *se);
/* Issues what is queued, then ends the thread. */
void notify_stop(void);
/* The kernel drops ino's attributes and, off >= 0, its cached pages of
 * [off, off + len) (len 0: to the end) and a directory's cached listing.
 * se: the session the caller serves (NULL: nothing to tell). */
void notify_inval_inode(struct fuse_session *se, uint64_t ino, off_t off, off_t len);
/* The kernel drops the entry name (namelen bytes) of directory parent,
 * and parent's cached listing. */
void notify_inval_entry(struct fuse_session *se, uint64_t parent, const char *name, size_t namelen);
/* Waits until everything queued before this call was issued. Never from a
 * request handler (the thread may wait for that request's reply). */
void notify_flush(void);
/* The same, from a request handler that holds no lock and whose request
 * is not one of notify_reply_begin's (a FLUSH: its answer tells the
 * caller that names it made or removed are as the kernel shows them),
 * waiting at most ms milliseconds: true when all was issued. */
bool notify_settle(int ms);
/* Around a request whose reply carries entries or a listing (LOOKUP,
 * READDIR, READDIRPLUS, and kin): begin before it reads the tree, end once
 * its reply is written. The token is begin's. */
unsigned notify_reply_begin(void);
void notify_reply_end(unsigned token);

#endif
