/* unmount.h - `h5fs -u MOUNTPOINT` (unmount.c): unmount and wait until
 * the daemon has written and closed FILE. */
#ifndef H5FS_UNMOUNT_H
#define H5FS_UNMOUNT_H

/* 0 (FILE final), or a tool exit status, with a message on stderr */
int h5fs_unmount_main(const char *mnt);

#endif
