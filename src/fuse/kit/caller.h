/* caller.h - who made the request a handler is answering (caller.c). */
#ifndef H5FS_CALLER_H
#define H5FS_CALLER_H

#include "fuse_ops.h"
#include <stdbool.h>
#include <sys/stat.h>

/* The request this thread answers now: its uid, gid and supplementary
 * groups, until caller_end(). */
void caller_begin(fuse_req_t req);
void caller_end(void);
/* Whether the caller could open a file of this owner and mode for reading
 * itself (the owner, group and other bits, as the kernel checks them;
 * root may). True outside a request (the daemon's own reads). */
bool caller_may_read(const struct stat *st);

#endif
