/* floor_common.c - the session loop and replies the bench floors share
 * (see floor_common.h). */
#include "floor_common.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

int floor_run(const char *prog, const struct fuse_lowlevel_ops *ops, const char *opts, const char *mnt,
	      void (*mounted)(const char *mnt))
{
	char *fargv[] = { (char *)prog, "-o", (char *)opts, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(opts ? 3 : 1, fargv);
	struct fuse_loop_config cfg = { .clone_fd = 0, .max_idle_threads = 10 };
	struct fuse_session *se;
	int rc = 1;

	se = fuse_session_new(&args, ops, sizeof(*ops), NULL);
	if (!se)
		return 1;
	if (fuse_set_signal_handlers(se) == 0) {
		if (fuse_session_mount(se, mnt) == 0) {
			if (mounted)
				mounted(mnt);
			rc = fuse_session_loop_mt(se, &cfg) != 0;
			fuse_session_unmount(se);
		}
		fuse_remove_signal_handlers(se);
	}
	fuse_session_destroy(se);
	return rc;
}

void floor_reply_xattr(fuse_req_t req, const char *buf, size_t len, size_t size)
{
	if (size == 0)
		fuse_reply_xattr(req, len);
	else if (size < len)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, len);
}

/* as h5fs's main.c: read_ahead_kb of the mount = 4 requests of
 * FLOOR_MAX_READ (in a thread: the mount answers stat only once the loop
 * runs) */
static void *raise_readahead(void *arg)
{
	const char *mnt = arg;
	char path[80];
	struct stat st;
	FILE *fp;

	if (stat(mnt, &st) != 0)
		return NULL;
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", major(st.st_dev), minor(st.st_dev));
	fp = fopen(path, "we");
	if (fp) {
		fprintf(fp, "%u\n", 4 * (FLOOR_MAX_READ / 1024));
		fclose(fp);
	}
	return NULL;
}

void floor_raise_readahead(const char *mnt)
{
	pthread_t t;

	if (pthread_create(&t, NULL, raise_readahead, (void *)mnt) == 0)
		pthread_detach(t);
}
