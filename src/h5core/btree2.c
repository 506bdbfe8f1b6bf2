/* btree2.c - not yet written */
#include "internal.h"
