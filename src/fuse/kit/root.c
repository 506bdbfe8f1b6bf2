/*
 * root.c - what every root shares (root.h): the refusal of a write a
 * root does not have.
 */
#include "root.h"

#include <errno.h>

int root_no_write(void)
{
	return EROFS;
}
