/* append.c - not yet written */
#include "internal.h"
