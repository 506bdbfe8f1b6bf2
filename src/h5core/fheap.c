/* fheap.c - not yet written */
#include "internal.h"
