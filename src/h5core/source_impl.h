/* source_impl.h - the byte-source classes the table in source.c knows
 * (one file each). */
#ifndef H5_SOURCE_IMPL_H
#define H5_SOURCE_IMPL_H

#include "source.h"

extern const h5_source_class h5_source_local_class;   /* source_local.c */

#endif
