/*
 * initio.c - FUSE_DIRECT_IO_ALLOW_MMAP asked for where libfuse cannot.
 *
 * Descriptors h5fs answers with direct_io (a read-write mount's datasets
 * that grow, a live FILE's rewritten ones while older descriptors are
 * open) bypass the page cache, so that rows appended are never read as
 * zeros (doc/APPEND.md). Without this flag the kernel refuses a shared
 * mapping of them (numpy.memmap: ENODEV); with it (kernel 6.6) it maps
 * them, invalidating the cached pages at each mmap and around each direct
 * write. libfuse asks for it from 3.16 (FUSE_CAP_DIRECT_IO_ALLOW_MMAP,
 * dispatch.c op_init); Debian 12 ships 3.14, whose session can only be
 * given its own reads and writes of /dev/fuse (fuse_session_custom_io).
 * So, there: the kernel's INIT request is read (does it offer the flag?),
 * and libfuse's INIT reply gets the flag (in flags2, with FUSE_INIT_EXT)
 * as it is written. Every other message passes unchanged.
 *
 * The splice ops are given too, as plain splice(2): libfuse 3.14 offers
 * FUSE_CAP_SPLICE_WRITE/_MOVE and _READ only to a custom io that has
 * them (fuse_lowlevel.c do_init), so without them every read answered
 * with FILE's extents (dispatch.c reply_extents) fell back to a
 * posix_memalign'd copy of each reply - an mmap, a pread, a writev and a
 * munmap per request, the first read of a fresh mount at 0.4x the FUSE
 * splice floor (issue 44). Neither the INIT request nor its reply ever
 * goes through them: libfuse splices only once INIT has set the protocol
 * minor and the capabilities wanted.
 */
#define _GNU_SOURCE  /* splice */
#include <config.h>
#include "fuse_ops.h"
#include "initio.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef FUSE_DIRECT_IO_ALLOW_MMAP
#define FUSE_DIRECT_IO_ALLOW_MMAP (1ULL << 36)  /* protocol 7.39 */
#endif

/* One session per process: the INIT request's id, and whether the kernel
 * offered the flag (atomics: libfuse's threads read and write) */
static uint64_t init_unique;
static bool offered;

/* The INIT request: its id, and the flag among those offered. */
static ssize_t io_read(int fd, void *buf, size_t len, void *ud)
{
	ssize_t n = read(fd, buf, len);
	struct fuse_in_header ih;
	struct fuse_init_in ii;

	(void)ud;
	if (n < (ssize_t)(sizeof(ih) + offsetof(struct fuse_init_in, flags2)))
		return n;
	memcpy(&ih, buf, sizeof(ih));
	if (ih.opcode != FUSE_INIT)
		return n;
	memset(&ii, 0, sizeof(ii));
	memcpy(&ii, (const char *)buf + sizeof(ih),
	       (size_t)n - sizeof(ih) < sizeof(ii) ? (size_t)n - sizeof(ih) : sizeof(ii));
	if ((size_t)n >= sizeof(ih) + offsetof(struct fuse_init_in, unused) && (ii.flags & FUSE_INIT_EXT) &&
	    (((uint64_t)ii.flags2 << 32) & FUSE_DIRECT_IO_ALLOW_MMAP)) {
		__atomic_store_n(&init_unique, ih.unique, __ATOMIC_RELEASE);
		__atomic_store_n(&offered, true, __ATOMIC_RELEASE);
	}
	return n;
}

/* The INIT reply (its header, then libfuse's fuse_init_out, maybe shorter
 * than ours) written with the flag added, grown to the full structure. */
static ssize_t io_writev(int fd, struct iovec *iov, int count, void *ud)
{
	struct fuse_out_header oh;
	struct fuse_init_out io;
	struct iovec v[2];
	size_t arg;
	ssize_t n;

	(void)ud;
	if (count != 2 || !__atomic_load_n(&offered, __ATOMIC_ACQUIRE) || iov[0].iov_len != sizeof(oh) ||
	    iov[1].iov_len > sizeof(io) || iov[1].iov_len < offsetof(struct fuse_init_out, max_background))
		return writev(fd, iov, count);
	memcpy(&oh, iov[0].iov_base, sizeof(oh));
	if (oh.error != 0 || oh.unique != __atomic_load_n(&init_unique, __ATOMIC_ACQUIRE) ||
	    __atomic_exchange_n(&offered, false, __ATOMIC_ACQ_REL) == false)
		return writev(fd, iov, count);
	arg = iov[1].iov_len;
	memset(&io, 0, sizeof(io));
	memcpy(&io, iov[1].iov_base, arg);
	/* the kernel reads the structure whole from protocol 7.23 on; an
	 * older minor keeps libfuse's reply as it is */
	if (io.minor < 23)
		return writev(fd, iov, count);
	io.flags |= FUSE_INIT_EXT;
	io.flags2 |= (uint32_t)(FUSE_DIRECT_IO_ALLOW_MMAP >> 32);
	oh.len = (uint32_t)(sizeof(oh) + sizeof(io));
	v[0] = (struct iovec){ .iov_base = &oh, .iov_len = sizeof(oh) };
	v[1] = (struct iovec){ .iov_base = &io, .iov_len = sizeof(io) };
	n = writev(fd, v, 2);
	/* libfuse checks the length it handed us */
	return n == (ssize_t)(sizeof(oh) + sizeof(io)) ? (ssize_t)(sizeof(oh) + arg) : n;
}

#if defined(HAVE_FUSE_SESSION_CUSTOM_IO) && !defined(FUSE_CAP_DIRECT_IO_ALLOW_MMAP)
/* Replies and requests through a pipe, as libfuse does without a custom io. */
static ssize_t io_splice(int fdin, off_t *offin, int fdout, off_t *offout, size_t len, unsigned int flags,
			 void *ud)
{
	(void)ud;
	return splice(fdin, offin, fdout, offout, len, flags);
}
#endif

int initio_attach(struct fuse_session *se)
{
#if defined(HAVE_FUSE_SESSION_CUSTOM_IO) && !defined(FUSE_CAP_DIRECT_IO_ALLOW_MMAP)
	static const struct fuse_custom_io io = {
		.read = io_read, .writev = io_writev, .splice_receive = io_splice, .splice_send = io_splice,
	};

	return fuse_session_custom_io(se, &io, fuse_session_fd(se));
#else
	(void)se;
	return 0;
#endif
}

