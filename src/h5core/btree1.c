/* btree1.c - not yet written */
#include "internal.h"
