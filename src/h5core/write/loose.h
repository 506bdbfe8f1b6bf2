/* loose.h - objects made and not linked yet (loose.c; h5_ws(f)->loose,
 * write/file_ws.h): the daemon's write-behind of new files makes a dataset's
 * header at create(2) and links it later, many in one commit
 * (h5_link_insert_batch). Until then nothing on disk references the
 * object, so a commit that changes only it (its rows, its attributes, its
 * times) keeps no order against a power cut: its fsyncs are skipped, and
 * the commit that links it makes it durable first (its stage). Every call
 * runs under f->write_lock. */
#ifndef H5_WRITE_LOOSE_H
#define H5_WRITE_LOOSE_H

#include "base.h"
#include "file.h"

/* addr made loose; start: the allocation end before its space. */
int h5_loose_add(h5_file *f, uint64_t addr, uint64_t start);
/* addr is linked now (or given up): its commits sync again. */
void h5_loose_drop(h5_file *f, uint64_t addr);
/* A commit of the object at addr begins: true when it is loose, and the
 * commit's fsyncs are skipped until h5_loose_leave (f->loose_on, which
 * h5_txn_begin reads into the commit's handle, txn.h): a property of the
 * commit under way, which holds write_lock. */
bool h5_loose_enter(h5_file *f, uint64_t addr);
void h5_loose_leave(h5_file *f, bool entered);

#endif
