/* startup.h - the h5fs command's checks and messages before it mounts
 * (startup.c; main.c uses them). */
#ifndef H5FS_STARTUP_H
#define H5FS_STARTUP_H

#include "fuse_ops.h"

#include <stdbool.h>

/* "TYPE of SOURCE" (malloc'd) when the mount on top at mnt (a real path)
 * is a FUSE file system, else NULL (also when /proc/self/mountinfo cannot
 * be read). */
char *startup_fuse_mount_on(const char *mnt);
/* Whether path (a real path) lies below the mount point of an h5fs mount
 * (the deepest mount above it is one). */
bool startup_inside_h5fs(const char *path);
/* Raise the read-ahead of the FUSE mount on mnt (a real path) to kb KiB
 * where it is less (root only: /sys/class/bdi/MAJ:MIN/read_ahead_kb).
 * Called between the mount and the session loop: the kernel sets the
 * value from INIT's reply (the smaller of the two), which op_init makes
 * kb too, so the value stays. Nothing goes through the mount. */
void startup_raise_readahead(const char *mnt, unsigned kb);
/* Gather libfuse's messages from now on, instead of printing them ... */
void startup_gather_fuse_log(void);
/* ... and print them as h5fs's on stderr; libfuse prints its own again. */
void startup_say_fuse_log(void);
/* Where a daemon with no syslog keeps its messages (doc/h5fs.1
 * LOGGING): ${XDG_STATE_HOME:-$HOME/.local/state}/h5fs/NAME-HASH.log,
 * one file per FILE (NAME: FILE's last component, HASH: of its whole
 * name as given absolute), the directories made (0700). malloc'd, or
 * NULL when there is no such place (no HOME, a directory not made). */
char *startup_state_log(const char *file);
/* fuse_daemonize(0), with a parent that reaps the daemon at once
 * (startup.c): the command exits once the daemon is up; its parent,
 * h5fs-reaper (argv and comm rewritten, every descriptor closed), waits
 * for it. Returns in the daemon: 0, or -1 (said on stderr). Before any
 * thread is started (none survives a fork). */
int startup_daemonize(int argc, char **argv);

#endif
