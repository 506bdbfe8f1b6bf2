/* dset_commit.h - the one ordered commit of a chunked dataset's data
 * (issue 81 item 3, doc/APPEND.md "Commit"): whatever filled it - rows
 * appended (append_commit.c), bytes rewritten, its size changed either
 * way, its last chunk moved down (chunk_rewrite.c) - the new chunks were
 * written through the chunk store (chunk_store.h) and their records set
 * on the index writer t carries; this makes them the dataset's. */
#ifndef H5_WRITE_DSET_COMMIT_H
#define H5_WRITE_DSET_COMMIT_H

#include "base.h"
#include "file.h"
#include "ohdr.h"
#include "txn.h"

/* The dataspace and layout messages of oh, stored in this header and not
 * shared (both are rewritten in place: H5_ERR_PERM), the dataspace a
 * version 1 or 2 message (IV.A.2.b). */
int h5_dset_commit_msgs(const h5_msg **ds, const h5_msg **lay, const h5_ohdr *oh);

/* Under f->write_lock, t begun (h5_txn_begin: durable or not, sync_later
 * or not, the index writer): the header at addr loaded; the index
 * writer's new blocks staged (last_end: the allocation end after the
 * writer's previous commit), fsync; the end of allocated space, fsync;
 * the one switch to the new index, fsync; the modification time and every
 * other chunk of the header; then the last write: the chunk holding
 * dims[0] = rows (UINT64_MAX: the size stays, the layout's chunk is
 * last). A crash before the last write keeps the old rows and bytes (a
 * shrink's dropped chunks read the fill value: the switch came first),
 * after it the new. The header's cached copy is dropped either way. */
int h5_dset_commit(h5_txn *t, uint64_t addr, uint64_t rows, uint64_t last_end);

#endif
