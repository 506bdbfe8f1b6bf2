/* ls_space.h - h5fs-ls --space (ls_space.c): where FILE's bytes go. */
#ifndef H5FS_LS_SPACE_H
#define H5FS_LS_SPACE_H

#include "h5core.h"

/* The engine's space report of f (opened from file) printed as text or
 * one JSON object; returns h5fs-ls's exit status. */
int ls_space_print(h5_file *f, const char *file, int json);

#endif
