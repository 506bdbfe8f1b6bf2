/* fuse_encode_floor: the fastest a FUSE file system can take a compressing
 * rewrite here, for filter_write_bench.py --encode-floor (issue 70: blosc
 * rewrites against h5py; bench/README.md, "encode floor"). h5py compresses
 * in its own process; a FUSE file system must also take every byte from
 * the kernel, on the same CPUs. This one serves one file, `data` (SIZE
 * bytes, written in place by `dd conv=notrunc`), set up as h5fs sets up
 * its write handles (direct_io, max_write 1 MiB, the same multithreaded
 * libfuse loop). Each WRITE's bytes are copied into a job buffer (libfuse's
 * buffer is its own once the reply goes) and answered at once; one
 * encoder thread per CPU compresses each job with Blosc (lz4, level 5,
 * byte shuffle, 4-byte elements: the bench's blosc dataset) and pwrites
 * the result to FILE, each at the next free offset: no index, no chunk
 * records, no commit. While two jobs an encoder wait, the WRITE encodes
 * its own (back-pressure, as h5fs does). FLUSH and FSYNC wait for every
 * job and fsync FILE.
 *
 *   fuse_encode_floor -f SIZE MNT FILE
 *
 * Built by filter_write_bench.py: cc -O2 fuse_encode_floor.c floor_common.c
 *   $(pkg-config --cflags --libs fuse3) -lblosc -lpthread
 */
#define _GNU_SOURCE
#include "floor_common.h"

#include <blosc.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DATA_INO 2
#define BLKSIZE (1 << 20)
#define MAXJOBS 64

struct job {
	uint8_t *buf;
	size_t len;
};

static off_t data_size;
static int store_fd = -1;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER, idle_cv = PTHREAD_COND_INITIALIZER;
static struct job q[MAXJOBS];
static size_t qhead, qlen, inwork, qmax;
static off_t next_off;
static int failed;

/* Compress job j and write it at the next free offset of FILE. */
static void encode(struct job *j)
{
	uint8_t *out = malloc(j->len + BLOSC_MAX_OVERHEAD);
	int r = out ? blosc_compress_ctx(5, 1, 4, j->len, j->buf, out, j->len + BLOSC_MAX_OVERHEAD, "lz4", 0, 1)
		    : -1;
	off_t at;

	if (r > 0) {
		pthread_mutex_lock(&mu);
		at = next_off;
		next_off += r;
		pthread_mutex_unlock(&mu);
		if (pwrite(store_fd, out, (size_t)r, at) != r)
			r = -1;
	}
	if (r <= 0)
		failed = 1;
	free(out);
	free(j->buf);
}

static void *encoder(void *arg)
{
	struct job j;

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&mu);
		while (!qlen)
			pthread_cond_wait(&work_cv, &mu);
		j = q[qhead];
		qhead = (qhead + 1) % MAXJOBS;
		qlen--;
		inwork++;
		pthread_mutex_unlock(&mu);
		encode(&j);
		pthread_mutex_lock(&mu);
		inwork--;
		pthread_cond_broadcast(&idle_cv);
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

static int drain(void)
{
	pthread_mutex_lock(&mu);
	while (qlen || inwork)
		pthread_cond_wait(&idle_cv, &mu);
	pthread_mutex_unlock(&mu);
	return failed ? EIO : fsync(store_fd) == 0 ? 0 : errno;
}

static void fill_stat(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_blksize = BLKSIZE;
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0644;
		st->st_nlink = 1;
		st->st_size = data_size;
	}
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->max_write = BLKSIZE;
	conn->want &= ~(unsigned)FUSE_CAP_SPLICE_READ;
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
	fuse_reply_attr(req, &st, 1.0);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
	(void)attr;
	(void)to_set;
	op_getattr(req, ino, fi);
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
	struct job j = { malloc(size ? size : 1), size };

	(void)ino;
	(void)off;
	(void)fi;
	if (!j.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	memcpy(j.buf, buf, size);
	pthread_mutex_lock(&mu);
	if (qlen + inwork < qmax) {
		q[(qhead + qlen) % MAXJOBS] = j;
		qlen++;
		pthread_cond_signal(&work_cv);
		pthread_mutex_unlock(&mu);
	} else {
		pthread_mutex_unlock(&mu);
		encode(&j);
	}
	fuse_reply_write(req, size);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, drain());
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino;
	(void)datasync;
	(void)fi;
	fuse_reply_err(req, drain());
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.open = op_open,
	.write = op_write,
	.flush = op_flush,
	.fsync = op_fsync,
};

int main(int argc, char **argv)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	if (argc != 5 || strcmp(argv[1], "-f") != 0) {
		fprintf(stderr, "usage: %s -f SIZE MNT FILE\n", argv[0]);
		return 2;
	}
	data_size = strtoll(argv[2], NULL, 10);
	store_fd = open(argv[4], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (store_fd < 0) {
		perror(argv[4]);
		return 1;
	}
	if (ncpu < 1)
		ncpu = 1;
	qmax = 2 * (size_t)ncpu < MAXJOBS ? 2 * (size_t)ncpu : MAXJOBS;
	for (long i = 0; i < ncpu; i++) {
		pthread_t t;

		if (pthread_create(&t, NULL, encoder, NULL) != 0)
			return 1;
		pthread_detach(t);
	}
	return floor_run(argv[0], &ops, "default_permissions", argv[3], NULL);
}
