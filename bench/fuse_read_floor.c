/* fuse_read_floor: the fastest a FUSE file system can serve a sequential
 * read here, for the read benchmarks (bench/README.md, "read floor"). It
 * serves one file, `data`, whose bytes are those of RAWFILE, set up as h5fs
 * serves an uncompressed dataset: keep_cache, max_read 1000 KiB, the
 * mount's read_ahead_kb raised to four such requests (as root), the same
 * multithreaded libfuse loop, and every read answered by splicing
 * RAWFILE's pages (no copy in user space). Whatever h5fs does beyond that
 * costs on top of this.
 *
 *   fuse_read_floor -f RAWFILE MNT     (the arguments of `h5fs -f FILE MNT`)
 *   fuse_read_floor -m RAWFILE MNT     the same, but RAWFILE read into memory
 *                                      first and every read answered from it
 *                                      with fuse_reply_buf: the floor of a
 *                                      file system whose bytes have no
 *                                      descriptor (h5fs's remote blocks,
 *                                      decoded chunks)
 *
 * Built by bench/run.sh: cc -O2 fuse_read_floor.c floor_common.c $(pkg-config --cflags --libs fuse3) -lpthread
 */
#include "floor_common.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DATA_INO 2
#define MAX_READ FLOOR_MAX_READ

static int raw_fd = -1;
static off_t raw_size;
static char *raw_mem;      /* -m: RAWFILE's bytes */

static void fill_stat(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = raw_size;
		st->st_blksize = 131072;
	}
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->max_write = 1u << 20;
	conn->max_read = MAX_READ;
	if (conn->capable & FUSE_CAP_SPLICE_WRITE)
		conn->want |= FUSE_CAP_SPLICE_WRITE;
	if (conn->capable & FUSE_CAP_SPLICE_MOVE)
		conn->want |= FUSE_CAP_SPLICE_MOVE;
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
	e.attr_timeout = e.entry_timeout = 3600.0;
	fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	fill_stat(ino, &st);
	fuse_reply_attr(req, &st, 3600.0);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != DATA_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(0);

	(void)ino;
	(void)fi;
	if (off >= raw_size) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if ((off_t)size > raw_size - off)
		size = (size_t)(raw_size - off);
	if (raw_mem) {
		fuse_reply_buf(req, raw_mem + off, size);
		return;
	}
	bv.buf[0].size = size;
	bv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	bv.buf[0].fd = raw_fd;
	bv.buf[0].pos = off;
	fuse_reply_data(req, &bv, FUSE_BUF_SPLICE_MOVE);
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.open = op_open,
	.read = op_read,
};

int main(int argc, char **argv)
{
	struct stat st;

	if (argc != 4 || (strcmp(argv[1], "-f") != 0 && strcmp(argv[1], "-m") != 0)) {
		fprintf(stderr, "usage: %s -f|-m RAWFILE MNT\n", argv[0]);
		return 2;
	}
	raw_fd = open(argv[2], O_RDONLY);
	if (raw_fd < 0 || fstat(raw_fd, &st) < 0) {
		perror(argv[2]);
		return 1;
	}
	raw_size = st.st_size;
	if (strcmp(argv[1], "-m") == 0) {
		raw_mem = malloc(raw_size ? (size_t)raw_size : 1);
		for (off_t got = 0; raw_mem && got < raw_size;) {
			ssize_t k = pread(raw_fd, raw_mem + got, (size_t)(raw_size - got), got);

			if (k <= 0) {
				perror(argv[2]);
				return 1;
			}
			got += k;
		}
		if (!raw_mem)
			return 1;
	}
	return floor_run(argv[0], &ops, "ro,default_permissions,max_read=1024000", argv[3], floor_raise_readahead);
}
