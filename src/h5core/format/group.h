/*
 * group.h - groups (group.c).
 */
#ifndef H5_FORMAT_GROUP_H
#define H5_FORMAT_GROUP_H

#include "base.h"
#include "ohdr.h"

/* ---- groups (group.c) ------------------------------------------------------ */
/* public: h5_group_iterate, h5_group_lookup (h5core.h) */
/* Whether the object header describes a group (stab, linfo or link messages). */
bool h5_ohdr_is_group(const h5_ohdr *oh);

#endif
