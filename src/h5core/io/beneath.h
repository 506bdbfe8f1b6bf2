/* beneath.h - opening names that must stay inside a directory tree
 * (beneath.c says why). */
#ifndef H5_BENEATH_H
#define H5_BENEATH_H

/* No such file (a missing component): not an error, the caller goes on to
 * its next candidate. */
#define H5_BENEATH_MISSING 1

/* Open rel, relative to the directory dirfd, with open(2) flags (O_CLOEXEC
 * added), resolved by the kernel without leaving the tree: a ".." or a
 * symlink leading out of it is H5_ERR_PERM (message set), a missing
 * component H5_BENEATH_MISSING, else 0 and *out. A leading '/' of rel is
 * ignored (rel is always taken from dirfd). */
int h5_open_beneath(int *out, int dirfd, const char *rel, int flags);

/* Open rel relative to dirfd (O_CLOEXEC added) only if no component is a
 * symlink and none leaves the tree (openat2 RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS): then the file's real path is dirfd's real path
 * and rel, known without asking the kernel. 0 and *out; H5_BENEATH_MISSING;
 * H5_BENEATH_OTHER when it cannot be opened so (a symlink on the way, no
 * openat2, or any other failure: errno says which), so the caller opens
 * it its usual way, which reports the error. */
#define H5_BENEATH_OTHER 2
int h5_open_nolinks(int *out, int dirfd, const char *rel, int flags);

/* Open path as open(2) does with flags (O_CLOEXEC added), where no tree
 * is to be kept to: FILE's own folder at mount, candidates under
 * -o ext_any. 0 and *out; H5_BENEATH_MISSING (errno kept) when it does
 * not exist; H5_ERR_NOFD when the process is out of descriptors, else
 * H5_ERR_PERM or H5_ERR_IO, message set and errno kept. */
int h5_open_path(int *out, const char *path, int flags);

/* The absolute path the kernel has for an open descriptor (/proc), or
 * NULL: what was opened, not what a name leads to now. */
char *h5_fd_real_path(int fd);

/* path's part below dir ("" for dir itself) when path is lexically dir or
 * inside it, else NULL (both absolute). */
const char *h5_path_beneath(const char *path, const char *dir);

#endif
