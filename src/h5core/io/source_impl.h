/* source_impl.h - the byte-source classes the table in source.c knows
 * (one file each). */
#ifndef H5_SOURCE_IMPL_H
#define H5_SOURCE_IMPL_H

#include "source.h"

extern const h5_source_class h5_source_local_class;   /* source_local.c */
extern const h5_source_class h5_source_http_class;    /* source_http.c (HAVE_CURL) */
extern const h5_source_class h5_source_s3_class;      /* source_s3.c (HAVE_CURL) */

/* A local source over a descriptor the caller opened (read-only, or
 * O_RDWR with opts->writable), which the source then owns, also on
 * failure: the files opened beneath a directory (beneath.h), FILE opened
 * anew from the folder taken at mount. name only for messages. */
int h5_source_local_adopt(h5_source **out, int fd, const char *name, const h5_source_opts *opts);

#endif
