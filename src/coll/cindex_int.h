/*
 * cindex_int.h - what cindex.c (the file, schema, statements) and
 * cindex_rec.c (the records) share. Private to them.
 */
#ifndef H5FS_CINDEX_INT_H
#define H5FS_CINDEX_INT_H

#include "cindex.h"

#include <pthread.h>
#include <sqlite3.h>

/* The prepared statements (SQL in cindex.c's query_sql). */
enum { Q_MEMBER, Q_NODES, Q_XATTRS, Q_RELATED, Q_DEL_NODES, Q_DEL_XATTRS, Q_DEL_RELATED, Q_DEL_MEMBER,
       Q_INS_MEMBER, Q_INS_NODE, Q_INS_XATTR, Q_INS_RELATED, Q_COUNT, Q_KIND, Q_SET_KIND, Q_DEL_KIND, Q_DEL_LS, Q_FOLDER, Q_N };

/* Our own outcomes, apart from SQLite's result codes (all >= 0). */
#define NOT_INDEX (-1)   /* db_open: the file is no index of ours */
#define BAD_RECORD (-2)  /* load_rows: the rows make no tree */

struct cindex {
	pthread_mutex_t lock;   /* one connection, one user at a time */
	sqlite3 *db;
	sqlite3_stmt *q[Q_N];
	char *path;
	cindex_log_fn log;
	void *log_arg;
};

/* One notice line to the handle's logger. */
void cindex_note(const cindex *ix, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* SQLite's word for "this file is not (any more) a sound database". */
int cindex_damaged(int rc);
/* h5_err_set of a failed statement: H5_ERR_IO (H5_ERR_NOMEM). */
int cindex_sql_err(const cindex *ix, int rc, const char *what);
/* A query found the file damaged: move it aside and start a fresh one
 * (called with the lock held). */
void cindex_rebuild(cindex *ix, int sqlrc);

/* The record of member row id (nodes, crc: its row's) read into *out:
 * SQLITE_OK, BAD_RECORD (its rows make no tree, or another CRC), or an
 * SQLite error (cindex_rec.c). */
int cindex_read_tree(cindex_tree **out, cindex *ix, int64_t id, int64_t nodes, uint32_t crc);
/* Within the caller's write transaction: t recorded under k (an older
 * record of k's view replaced); k's file row set to kind (0, 1, 2 with
 * why). SQLITE_OK or an SQLite error. */
int cindex_put_tree(cindex *ix, const cindex_key *k, const cindex_tree *t);
int cindex_put_kind(cindex *ix, const cindex_key *k, int kind, const char *why);
/* Copy into the fresh index ix (its lock held) what the damaged file old
 * (opened by db_open) still holds whole: every member record whose rows
 * read back with their CRC, every file row the scans reach; *records and
 * *kinds say how many (cindex_salvage.c). */
void cindex_salvage(size_t *records, size_t *kinds, cindex *ix, cindex *old);

#endif
