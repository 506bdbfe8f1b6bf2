/*
 * live.c - live files (-o refresh=SECONDS; README "Live files"): a
 * mounted FILE that changes shows its new state. Until FILE first changes
 * it costs nothing: its reads are answered as a frozen mount answers them
 * (spliced, from the page cache, nothing hashed). The first change seen
 * switches the mount to checked reads for the rest of its life, and from
 * then on no read returns stale or mixed bytes. The design is generations,
 * chosen to be obviously correct rather than clever:
 *
 * - Noticing (live/watch.c). A watcher thread looks at FILE and the
 *   related files its generation opened (external link targets, VDS
 *   sources) whenever inotify reports an event on FILE or its directory,
 *   and at least every refresh seconds: h5_file_changed() compares fstat
 *   of the open descriptor and stat of the path with the stamp taken at
 *   open (device, inode, size, mtime, ctime). A remote FILE is probed (its
 *   ETag). A SWMR writer opening FILE writes its superblock: a change too.
 * - Fast until then, checked after (lv->checked, live_checked()). The one
 *   window: a read overlapping FILE's first in-place change (from the
 *   write until the watcher has seen it and dropped the kernel's pages,
 *   milliseconds with inotify, up to refresh seconds without) may return
 *   bytes of both versions; a rename over FILE or an append cannot mix:
 *   what a descriptor still open read before is compared with the new
 *   version before it reads on (live/pcache.c pcache_keep_old: a cat
 *   between two read()s, the dataset at the same address in the renamed
 *   FILE, got both). `-o live=strict` checks from the
 *   first read; so does a mount of a FILE a SWMR writer has open (its
 *   superblock says so) or whose lock a writer holds.
 * - A change opens FILE anew, by its path, as the next generation (struct
 *   gen, member/member.h): a new source, a new related-file table, and a view of its
 *   own in the mount's one engine context (h5_open_opts.ctx: the cache
 *   budget and decoding threads are the mount's, not one set per
 *   generation; cache keys carry the generation's file), so no decoded
 *   metadata, chunk index or chunk of the old bytes is ever used with the
 *   new ones, and the old generation's entries go when it is closed.
 *   Half-written metadata (a SWMR writer flushing, a copy under way) fails
 *   to open: the watcher tries again with doubling backoff; a request
 *   tries once and goes on with its own bounded backoff. Nobody sleeps or
 *   opens FILE holding lv->mu, and no request waits for a refresh another
 *   thread is making (live_refresh): no request waits on another that
 *   waits on FILE. Bytes that are not HDF5 at all answer EIO at once.
 * - Nodes are re-resolved by path (node/fresh.c): all of them by the
 *   watcher right after a new generation (sweep), and any a request meets
 *   before that (node_fresh). If the path leads to the same object, its
 *   fields replace the node's; else the node is stale (ESTALE on open
 *   descriptors, ENOENT to lookups). Its id is not given to another object
 *   while the kernel holds it (FUSE requests carry no generation: reads of
 *   the old inode would get the other object's bytes): a name that now
 *   leads to a stale node's id is shown under its (parent, name) number
 *   instead (member/lookup.c show_object). An old generation is closed when the last
 *   node and read let go.
 * - The kernel's caches: a local FILE's entries, attributes and listings
 *   are kept as a frozen mount's (node_timeout; a remote FILE's time out
 *   after refresh seconds); after a change the watcher invalidates every
 *   inode (pages, attributes, cached listings) and the entries whose path
 *   now leads elsewhere, through the notification thread (kit/notify.h),
 *   which first lets replies made from the old generation land. Reads keep the page cache before and after a change (so
 *   numpy.memmap works): once checked, every page answered is recorded
 *   and verified before it could meet another version's (live/pcache.c).
 *   Only while descriptors that hold pages of a rewritten version are
 *   still open does a new descriptor of that dataset read with direct_io
 *   (a read() the kernel splits into several requests kept to one version
 *   by live/dio.c). Checked bytes are copied rather than spliced (a splice
 *   happens while the reply is written, after the check below).
 * - Checked reads are checked after they are made (live_read_check):
 *   FILE's descriptor still has its generation's stamp, so no byte was
 *   written meanwhile; else the read is made again on a new generation (at
 *   most H5FS_LIVE_READ_TRIES times, then EIO with a log line). File times
 *   move in clock ticks, so a generation opened within LIVE_QUIET_NS of
 *   FILE's last change cannot be vouched for by its stamp ("racy", as
 *   git's index says) and is opened again once FILE is quiet. Nor can one
 *   opened while a write() is still copying its bytes in: the times move
 *   when a write starts, its inotify event comes when it returns, and a
 *   write descheduled on a loaded machine can take longer than
 *   LIVE_QUIET_NS. With inotify, a stamp vouches only once an event of
 *   FILE came after it (live_writes_done; LIVE_SETTLE_NS where no event
 *   ever comes: writers through mmap, file systems that send none, once
 *   no other process has FILE open for writing, LIVE_WRITER_NS at most). A file
 *   a SWMR writer has open is read as libhdf5's SWMR reader does: such a
 *   writer never rewrites data in place and its metadata is checksummed,
 *   so reads are not refused for its appends, and a failed decode is
 *   retried on a fresh generation with backoff.
 * - A read-write mount is live too, between its writes: it holds FILE's
 *   lock only while it writes (node/node.c fs_write_begin), and while
 *   it holds it nobody else writes FILE, so no refresh runs then (the
 *   stamp is stale until the lock is given back, when the engine takes it
 *   again as our writes left FILE: they are no change) and reads of the
 *   current generation need no stamp to vouch for them (own_write). A
 *   refresh that opened FILE while one of our writes ran is dropped
 *   (fs->wepoch): it may have read metadata half written. Writers write
 *   through the current generation only (node/node.c fs_write_begin,
 *   behind/write.c wfile_follow).
 */
#include "live.h"

#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

int64_t live_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void live_sleep_ns(int64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000), (long)(ns % 1000000000) };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static int64_t latest_ns(int64_t m, int64_t c)
{
	return m > c ? m : c;
}

static struct gen *gen_make(h5fs *fs, h5_file *f)
{
	struct gen *g = calloc(1, sizeof(*g));
	h5_file_stamp s;

	if (!g)
		return NULL;
	g->f = f;
	g->refs = 1;
	g->num = ++fs->lv->ngen;
	g->swmr = h5_file_swmr(f) != 0;
	if (h5_file_stamp_get(&s, f)) {
		int64_t t = latest_ns(s.mtime_ns, s.ctime_ns);

		g->racy = live_now_ns() - t < LIVE_QUIET_NS || !live_writes_done(fs->lv, t);
	}
	return g;
}


/* A local FILE's watcher looks at it after every inotify event and at
 * least every refresh seconds whether or not requests come, and each
 * change it sees tells the kernel exactly what to drop (node_sweep,
 * through kit/notify.h, whose gate keeps a reply of the old generation
 * from landing after that): the kernel may keep entries, attributes and
 * listings as a frozen mount's, and a warm walk or open costs no request
 * (issue 70). A remote FILE is probed only after a request came
 * (live_tick): its entries time out so that requests keep coming. */
double node_timeout(const h5fs *fs)
{
	return fs->live && !fs->lv->local ? (double)fs->lv->refresh : H5FS_TIMEOUT;
}

bool live_checked(const h5fs *fs)
{
	return fs->live && __atomic_load_n(&fs->lv->checked, __ATOMIC_ACQUIRE);
}

bool live_fast_begin(h5fs *fs)
{
	if (!fs->live)
		return false;
	/* counted first, then checked: the sweep sets nothing, but reads
	 * the count after `checked` was set (both sequentially consistent) */
	__atomic_add_fetch(&fs->lv->fast_reads, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&fs->lv->checked, __ATOMIC_SEQ_CST))
		return true;
	live_fast_end(fs);
	return false;
}

void live_fast_end(h5fs *fs)
{
	__atomic_sub_fetch(&fs->lv->fast_reads, 1, __ATOMIC_SEQ_CST);
}

/* The first change: reads are checked from now on (logged once). */
static void set_checked(h5fs *fs)
{
	if (!__atomic_exchange_n(&fs->lv->checked, true, __ATOMIC_SEQ_CST))
		h5fs_log(fs, LOG_INFO, "%s changed: reads are checked from now on", fs->lv->path);
}

void h5fs_set_changed(h5fs *fs)
{
	if (fs->live)
		__atomic_store_n(&fs->lv->checked, true, __ATOMIC_RELEASE);
}

/* Whether another process holds a write lock on FILE (libhdf5 writers take
 * flock LOCK_EX, or an fcntl lock where flock is missing): then it is
 * being written and is checked from the first read. Read from /proc/locks
 * ("1: FLOCK  ADVISORY  WRITE PID MAJ:MIN:INO 0 EOF", device numbers in
 * hex; a waiter's line has "->" and does not parse) rather than by
 * opening FILE: a collection counts every descriptor it holds on its
 * members (-o max_files), and a test lock would be one more. */
static bool writer_lock_held(const char *path)
{
	struct stat st;
	char line[256];
	FILE *fp;
	bool held = false;

	if (stat(path, &st) != 0 || !(fp = fopen("/proc/locks", "re")))
		return false;
	while (!held && fgets(line, sizeof(line), fp)) {
		char kind[16], mode[16], rw[16];
		unsigned maj, min;
		unsigned long long ino;

		if (sscanf(line, "%*d: %15s %15s %15s %*d %x:%x:%llu", kind, mode, rw, &maj, &min, &ino) == 6 &&
		    strcmp(rw, "WRITE") == 0 && maj == major(st.st_dev) && min == minor(st.st_dev) &&
		    ino == (unsigned long long)st.st_ino)
			held = true;
	}
	fclose(fp);
	return held;
}

int live_new(h5fs *fs, h5_file *f, void (*sweep)(h5fs *fs))
{
	struct live *lv = calloc(1, sizeof(*lv));
	h5_file_stamp s;

	if (!lv)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	pthread_mutex_init(&lv->mu, NULL);
	lv->wake[0] = lv->wake[1] = lv->ino_fd = lv->file_wd = lv->dir_wd = -1;
	lv->opts = fs->cfg.open_opts;
	lv->refresh = fs->cfg.refresh;
	lv->sweep = sweep;
	fs->lv = lv;
	fs->gen = gen_make(fs, f);
	if (!fs->gen)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	/* tests: FILE taken as written just before the mount (its stamp
	 * racy), so that it is opened again, unchanged, a refresh later,
	 * however long the daemon took to start (test_views regen) */
	if (getenv("H5FS_TEST_RACY_MOUNT"))
		fs->gen->racy = true;
	lv->seen = fs->gen->num;
	/* local files have a stamp; remote ones ask the server (by ETag) */
	fs->live = lv->refresh > 0 && lv->opts && h5_file_watchable(f);
	lv->local = h5_file_stamp_get(&s, f);
	/* checked from the first read: asked for, or FILE is being written
	 * (a SWMR writer has it open, or a writer holds its lock) */
	lv->checked = fs->cfg.live_strict || fs->gen->swmr;
	if (fs->live && lv->local && !lv->checked && writer_lock_held(h5_file_path(f))) {
		h5fs_log(fs, LOG_INFO, "%s is locked by a writer: reads are checked from the start", h5_file_path(f));
		lv->checked = true;
	}
	if (fs->live && !lv->local) {
		if (!(lv->path = strdup(h5_file_path(f))))
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
	} else if (fs->live) {
		/* the real path: the daemon leaves its directory
		 * (fuse_daemonize), and a FILE named through a symlink mounted
		 * the symlink's target, whose name is followed (doc/h5fs.1
		 * SECURITY: repointing the symlink is not) */
		const char *p = h5_file_real_path(f) ? h5_file_real_path(f) : h5_file_path(f);
		char cwd[PATH_MAX];
		struct stat st;

		if (p[0] != '/' && getcwd(cwd, sizeof(cwd)))
			lv->path = h5_path_join(cwd, p);
		else
			lv->path = strdup(p);
		if (!lv->path)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		/* FILE's name in dir_fd. A collection's member: dir_fd is the
		 * collection's tree (ext_root), so its path below it; its base
		 * name there was no file, and every change of a member in a
		 * folder failed to open ("changed and cannot be read now: No
		 * such file or directory"). One not below it (reached through
		 * a symlink): opened by its path, as the collection opened it. */
		size_t rl = lv->opts->ext_root ? strlen(lv->opts->ext_root) : 0;
		const char *nm = lv->opts->dir_name ? lv->opts->dir_name
			       : strrchr(lv->path, '/') ? strrchr(lv->path, '/') + 1 : lv->path;

		if (!lv->opts->dir_name && rl)
			nm = strncmp(lv->path, lv->opts->ext_root, rl) == 0 && lv->path[rl] == '/' && lv->path[rl + 1]
			     ? lv->path + rl + 1 : NULL;
		if (nm && !(lv->name = strdup(nm)))
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		if (fstat(h5_file_fd(f), &st) == 0) {
			lv->owner = st.st_uid;
			lv->ftype = st.st_mode & S_IFMT;
		}
	}
	return 0;
}

/* Whether FILE's name still leads to the file open_again refused (lv->mu
 * held). */
static bool still_refused(struct live *lv)
{
	struct stat st;

	if (!lv->refused || !lv->opts->dir_fd || *lv->opts->dir_fd < 0 || !lv->name)
		return false;
	if (fstatat(*lv->opts->dir_fd, lv->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == lv->refused_dev &&
	    st.st_ino == lv->refused_ino)
		return true;
	lv->refused = false;
	return false;
}

/* FILE opened anew, as the next generation. A local FILE mounted from its
 * folder (opts->dir_fd, main.c open_local) is opened from there only, by
 * its name, never through a symlink, and followed only to a file of the
 * kind and owner it had at mount: another user who may rename in FILE's
 * folder must not make a daemon running as root serve (or write) a file
 * of root's through a mount of theirs. Refused: H5_ERR_PERM, and the
 * mount keeps the generation it has. */
static int open_again(struct live *lv, h5_file **out)
{
	struct stat st;
	int fd, rc;

	*out = NULL;
	if (!lv->local || !lv->opts->dir_fd || *lv->opts->dir_fd < 0 || !lv->name)
		return h5_file_open(out, lv->path, lv->opts);
	fd = openat(*lv->opts->dir_fd, lv->name,
		    (lv->opts->writable ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && errno == ELOOP)
		return h5_err_set(H5_ERR_PERM, "%s is now a symbolic link: not followed, the mount keeps "
				  "showing the file it had", lv->path);
	if (fd < 0)
		return h5_err_set(errno == ENOENT ? H5_ERR_NOTFOUND : H5_ERR_IO, "%s: %s", lv->path, strerror(errno));
	if (fstat(fd, &st) < 0) {
		rc = h5_err_set(H5_ERR_IO, "%s: %s", lv->path, strerror(errno));
		close(fd);
		return rc;
	}
	if ((st.st_mode & S_IFMT) != lv->ftype || st.st_uid != lv->owner) {
		rc = h5_err_set(H5_ERR_PERM, "%s is now %s (uid %u; FILE was uid %u's): not followed, the mount "
				"keeps showing the file it had", lv->path,
				(st.st_mode & S_IFMT) != lv->ftype ? "another kind of file" : "another user's file",
				(unsigned)st.st_uid, (unsigned)lv->owner);
		close(fd);
		return rc;
	}
	(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return h5_file_open_fd(out, fd, lv->path, lv->opts);
}

/* ---- refreshing ------------------------------------------------------------ */

/* One of our writes holds FILE's lock (*epoch: how many were begun so far);
 * with g, one of g, the current generation (the lock is only ever taken
 * on it). Nobody else writes FILE meanwhile. */
static bool own_write(h5fs *fs, const struct gen *g, uint64_t *epoch)
{
	bool w;

	pthread_mutex_lock(&fs->wmu);
	w = pager_writing(&fs->pg) && (!g || g == fs->gen);
	if (epoch)
		*epoch = fs->wepoch;
	pthread_mutex_unlock(&fs->wmu);
	return w;
}

/* h5_file_changed of a generation's FILE: under fs->wmu, which our writes
 * hold while they take FILE's stamp again (h5_file_unlock) */
static int file_changed(h5fs *fs, h5_file *f, const char *path)
{
	int m;

	pthread_mutex_lock(&fs->wmu);
	m = h5_file_changed(f, path);
	pthread_mutex_unlock(&fs->wmu);
	return m;
}

/* Wait (at most max_ns) until FILE is quiet: changed more than a clock tick
 * ago, and the write that changed it has returned. Never under lv->mu. */
static void wait_quiet(struct live *lv, int64_t max_ns)
{
	struct stat st;
	int64_t at, d;

	if (!lv->local || stat(lv->path, &st) != 0)
		return;
	at = latest_ns((int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
		       (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec);
	d = live_now_ns() - at;
	if (d >= 0 && d < LIVE_QUIET_NS)
		live_sleep_ns(LIVE_QUIET_NS - d);
	for (int64_t w = 0; w < max_ns && !live_writes_done(lv, at); w += 2000000) {
		live_sleep_ns(2000000);
		if (live_read_events(lv))
			(void)!write(lv->wake[1], "k", 1);
	}
}

/* Open FILE anew when it changed (doubt: also when the stamp says nothing,
 * after a failed read). Called without lv->mu; one thread at a time opens
 * (lv->refreshing), outside the mutex: a request that finds another at it
 * does not wait (LIVE_BUSY). patient: the watcher's, which waits for a
 * write to settle and retries a failed open with backoff; a request waits
 * at most LIVE_REQ_SETTLE_NS and opens once. 1 when a new generation is
 * current, 0 when nothing changed, LIVE_BUSY, or a negative h5_err (logged
 * once) when FILE cannot be opened now. */
#define LIVE_BUSY 2
int live_refresh(h5fs *fs, bool doubt, bool patient)
{
	struct live *lv = fs->lv;
	struct gen *cur, *g;
	h5_file *f = NULL;
	struct stat st;
	unsigned long long num;
	uint64_t epoch;
	int m, fd, rc = 0;

	pthread_mutex_lock(&lv->mu);
	if (lv->refreshing) {
		pthread_mutex_unlock(&lv->mu);
		return LIVE_BUSY;
	}
	cur = fs->gen;
	/* our write under way: FILE is ours alone, its stamp taken again
	 * when the lock is given back (what we wrote is no change) */
	if (own_write(fs, NULL, &epoch)) {
		pthread_mutex_unlock(&lv->mu);
		return 0;
	}
	m = file_changed(fs, cur->f, lv->local ? lv->path : NULL);
	if (m == H5_CHANGED_PATH && still_refused(lv))
		m = 0;          /* the file not followed is still there: no change */
	if ((!m && !cur->racy && !doubt) || (!lv->local && !m)) {
		/* (a remote FILE: the same object on the server, nothing to reopen) */
		pthread_mutex_unlock(&lv->mu);
		return 0;
	}
	if (m == H5_CHANGED_GONE) {
		/* the descriptor still reads the last state */
		if (!lv->gone_logged)
			h5fs_log(fs, LOG_NOTICE, "%s was deleted: showing its last state", lv->path);
		lv->gone_logged = true;
		pthread_mutex_unlock(&lv->mu);
		return 0;
	}
	lv->gone_logged = false;
	if (m)
		set_checked(fs);
	__atomic_store_n(&lv->refreshing, true, __ATOMIC_RELEASE);
	gen_hold(cur);
	pthread_mutex_unlock(&lv->mu);

	for (int t = 0; t < (patient ? LIVE_OPEN_TRIES : 1); t++) {
		if (t)
			live_sleep_ns(5000000LL << (t - 1));
		/* changed within a clock tick: let it be quiet first; a write
		 * still copying in: wait for its event (where none comes,
		 * LIVE_SETTLE_NS at most: a read waits rather than fails) */
		wait_quiet(lv, patient ? LIVE_SETTLE_NS : LIVE_REQ_SETTLE_NS);
		rc = open_again(lv, &f);
		/* not HDF5 at all (overwritten with other bytes): no writer's
		 * flush explains it, the next look tries again; a file that is
		 * not followed (open_again) is not one either */
		if (rc == 0 || rc == H5_ERR_NOTHDF5 || rc == H5_ERR_PERM)
			break;
	}

	pthread_mutex_lock(&lv->mu);
	__atomic_store_n(&lv->refreshing, false, __ATOMIC_RELEASE);
	if (rc == H5_ERR_PERM) {
		/* not followed (open_again): the mount goes on with the file it
		 * has, writes included; said once per file put there */
		struct stat nst;
		bool said = false;

		if (lv->opts->dir_fd && lv->name && fstatat(*lv->opts->dir_fd, lv->name, &nst, AT_SYMLINK_NOFOLLOW) == 0) {
			said = lv->refused && lv->refused_dev == nst.st_dev && lv->refused_ino == nst.st_ino;
			lv->refused = true;
			lv->refused_dev = nst.st_dev;
			lv->refused_ino = nst.st_ino;
		}
		if (!said)
			h5fs_log(fs, LOG_WARNING, "%s", h5_err_msg());
		h5_err_clear();
		rc = 0;
		if (!(m & H5_CHANGED_BYTES)) {
			pthread_mutex_unlock(&lv->mu);
			gen_release(cur);
			return 0;
		}
		/* the file mounted changed too: its new state, from the
		 * descriptor the mount has (never from the name) */
		fd = fcntl(h5_file_fd(cur->f), F_DUPFD_CLOEXEC, 0);
		rc = fd < 0 ? h5_err_set(H5_ERR_IO, "%s: %s", lv->path, strerror(errno))
			    : h5_file_open_fd(&f, fd, lv->path, lv->opts);
	}
	if (rc < 0) {
		/* written in place and unreadable now: its old bytes are gone
		 * (said by the watcher, after its tries; by anyone when the
		 * bytes are not HDF5 at all) */
		if ((m & H5_CHANGED_BYTES) && (patient || rc == H5_ERR_NOTHDF5))
			__atomic_store_n(&cur->broken, true, __ATOMIC_RELEASE);
		if (rc != lv->failed_rc)
			h5fs_log(fs, LOG_ERR, "%s changed and cannot be read now%s: %s", lv->path,
				 (m & H5_CHANGED_BYTES) ? " (reads answer EIO)" : "", h5_err_msg());
		lv->failed_rc = rc;
		pthread_mutex_unlock(&lv->mu);
		gen_release(cur);
		return rc;
	}
	lv->failed_rc = 0;
	g = gen_make(fs, f);
	if (!g) {
		pthread_mutex_unlock(&lv->mu);
		h5_file_close(f);
		gen_release(cur);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	g->ver = cur->ver + (m != 0);
	/* one of our writes began meanwhile: f may have read what it was
	 * writing, and FILE's stamp is ours again once it ends; a write
	 * under way keeps the generation it locked (wmu held until published) */
	pthread_mutex_lock(&fs->wmu);
	if (pager_writing(&fs->pg) || fs->wepoch != epoch) {
		pthread_mutex_unlock(&fs->wmu);
		pthread_mutex_unlock(&lv->mu);
		gen_release(g);         /* closes f */
		gen_release(cur);
		return 0;
	}
	/* nothing changed FILE but our writes (a racy stamp checked again):
	 * g's writes go on where cur's left off, not past the room cur's
	 * last commit reserved (issue 57: a mkdir left FILE 1 MiB larger) */
	if (!m)
		h5_file_space_handover(f, cur->f);
	pthread_mutex_lock(&fs->lock);
	fs->gen = g;            /* cur: only this thread publishes (refreshing) */
	__atomic_store_n(&fs->f, f, __ATOMIC_RELEASE);
	__atomic_store_n(&fs->file_mtime, h5_file_mtime(f), __ATOMIC_RELAXED);
	if (lv->local && stat(lv->path, &st) == 0)
		__atomic_store_n(&fs->file_size, (uint64_t)st.st_size, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&fs->lock);
	pthread_mutex_unlock(&fs->wmu);
	kind_forget_all(fs);
	live_watch_path(lv);    /* a file renamed over FILE: watch the new one */
	/* g may be replaced and closed by the next refresh once lv->mu is let go */
	num = g->num;
	pthread_mutex_unlock(&lv->mu);
	gen_release(cur);       /* fs->gen's reference */
	gen_release(cur);       /* ours */
	/* a request's refresh: the watcher sweeps now (the kernel's pages of
	 * the old bytes go; until then is the first change's window) */
	if (!patient && __atomic_load_n(&lv->started, __ATOMIC_ACQUIRE))
		(void)!write(lv->wake[1], "k", 1);
	h5fs_log(fs, LOG_DEBUG, "%s changed: generation %llu", lv->path, num);
	return 1;
}

/* A request's pause before its next attempt, its own, holding nothing:
 * after a failed open (a writer mid-write), 5 ms doubling; while another
 * thread opens FILE anew (rc LIVE_BUSY), until it is done, LIVE_REQ_WAIT_NS
 * at most (polled: the request does not block on that thread). Over
 * H5FS_LIVE_READ_TRIES attempts a request waits well under a second. */
#define LIVE_REQ_WAIT_NS 250000000LL
static void backoff(struct live *lv, int attempt, int rc)
{
	if (rc == LIVE_BUSY) {
		for (int64_t w = 0; w < LIVE_REQ_WAIT_NS && __atomic_load_n(&lv->refreshing, __ATOMIC_ACQUIRE);
		     w += 2000000)
			live_sleep_ns(2000000);
		return;
	}
	live_sleep_ns(5000000LL << attempt);
}

bool live_retry(h5fs *fs, int attempt)
{
	struct live *lv = fs->lv;
	struct gen *g;
	bool worth;
	int rc;

	if (!fs->live || attempt + 1 >= H5FS_LIVE_READ_TRIES)
		return false;
	/* metadata a writer is still writing (a SWMR writer's flush, a
	 * file being copied): a fresh generation after a pause */
	g = gen_current(fs);
	worth = !own_write(fs, g, NULL) && (g->swmr || g->racy || file_changed(fs, g->f, lv->local ? lv->path : NULL));
	gen_release(g);
	if (!worth)
		return false;
	rc = live_refresh(fs, true, false);
	h5_err_clear();
	if (rc == H5_ERR_NOTHDF5)
		return false;   /* not HDF5 now: EIO at once */
	if (rc != 1)
		backoff(lv, attempt, rc);
	return true;
}

int live_read_check(h5fs *fs, struct gen *g, int attempt, bool failed, const char *path)
{
	bool ok;
	int rc = 0;

	if (!g || !fs->live)
		return 0;
	if (!live_checked(fs)) {
		/* Fast reads are not checked, but a read that failed because
		 * FILE changed under it (a remote object replaced: its ETag no
		 * longer matches) is the first change, seen here before the
		 * watcher's probe: from now on reads are checked, and this one
		 * is made again on a new generation. */
		if (!failed || own_write(fs, g, NULL) ||
		    (!__atomic_load_n(&g->broken, __ATOMIC_ACQUIRE) && file_changed(fs, g->f, NULL) == 0))
			return 0;
		set_checked(fs);
	}
	/* an answer made on an old generation whose bytes are intact (FILE
	 * renamed over, or deleted) is one version: it may go */
	ok = !__atomic_load_n(&g->broken, __ATOMIC_ACQUIRE) &&
	     (g->swmr || own_write(fs, g, NULL) || (!g->racy && file_changed(fs, g->f, NULL) == 0));
	if (ok && !(failed && g->swmr))
		return 0;
	if (attempt + 1 < H5FS_LIVE_READ_TRIES) {
		struct gen *cur = gen_current(fs);

		if (cur == g)
			rc = live_refresh(fs, true, false);
		gen_release(cur);
		h5_err_clear();
	}
	if (attempt + 1 >= H5FS_LIVE_READ_TRIES || rc == H5_ERR_NOTHDF5) {
		if (!failed)
			h5fs_log(fs, LOG_ERR, "read %s: %s %s: EIO", show_path(path), fs->lv->path,
				 rc == H5_ERR_NOTHDF5 || __atomic_load_n(&g->broken, __ATOMIC_ACQUIRE)
					 ? "was rewritten and cannot be read now"
					 : "kept changing while being read");
		return EIO;
	}
	if (failed || rc == LIVE_BUSY || rc < 0)
		backoff(fs->lv, attempt, rc);   /* a SWMR writer mid-flush, a refresh under way */
	return EAGAIN;
}
