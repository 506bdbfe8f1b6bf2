/* fuse_floor: the fastest a FUSE file system can take `cat rows.bin >> MNT/data`
 * on this machine, for the append benchmark (bench/README.md, "append
 * floor"). It serves one file, `data`, exactly as h5fs serves an appendable
 * dataset (direct_io, 1 MiB st_blksize and max_write, the same multithreaded
 * libfuse loop) and answers every write at once without storing a byte.
 * Whatever h5fs does with the rows costs on top of this.
 *
 *   fuse_floor -f IGNORED MNT     (the arguments of `h5fs -f FILE MNT`)
 *
 * Built by bench/run.sh: cc -O2 fuse_floor.c floor_common.c $(pkg-config --cflags --libs fuse3)
 */
#include "floor_common.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define DATA_INO 2
#define BLKSIZE (1 << 20)

static void fill_stat(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0644;
		st->st_nlink = 1;
		st->st_blksize = BLKSIZE;
	}
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->max_write = BLKSIZE;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;

	if (parent != FUSE_ROOT_ID || strcmp(name, "data") != 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = DATA_INO;
	fill_stat(DATA_INO, &e.attr);
	fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	fill_stat(ino, &st);
	fuse_reply_attr(req, &st, 0);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != DATA_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	fi->direct_io = 1;
	fuse_reply_open(req, fi);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)ino;
	(void)buf;
	(void)off;
	(void)fi;
	fuse_reply_write(req, size);
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.open = op_open,
	.write = op_write,
};

int main(int argc, char **argv)
{
	if (argc != 4 || strcmp(argv[1], "-f") != 0) {
		fprintf(stderr, "usage: %s -f IGNORED MOUNTPOINT\n", argv[0]);
		return 2;
	}
	return floor_run(argv[0], &ops, NULL, argv[3], NULL);
}
