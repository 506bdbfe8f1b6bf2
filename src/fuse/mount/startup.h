/* startup.h - the h5fs command's checks and messages before it mounts
 * (startup.c; main.c uses them). */
#ifndef H5FS_STARTUP_H
#define H5FS_STARTUP_H

#include "fuse_ops.h"

/* "TYPE of SOURCE" (malloc'd) when the mount on top at mnt (a real path)
 * is a FUSE file system, else NULL (also when /proc/self/mountinfo cannot
 * be read). */
char *startup_fuse_mount_on(const char *mnt);
/* Gather libfuse's messages from now on, instead of printing them ... */
void startup_gather_fuse_log(void);
/* ... and print them as h5fs's on stderr; libfuse prints its own again. */
void startup_say_fuse_log(void);

#endif
