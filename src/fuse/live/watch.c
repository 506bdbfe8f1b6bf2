/*
 * watch.c - live files: the watcher thread (inotify on FILE and
 * its folder, and a look at least every refresh seconds), and the sweep
 * after a new generation: every node re-resolved in it and the kernel's
 * caches of them dropped (live/live.c's header has the story).
 */
#include "live.h"

#include <dirent.h>
#include <poll.h>
#include <sys/inotify.h>

/* Whether wd watches a related file (live_tick): its events wake the
 * watcher but are not FILE's. */
static bool related_wd(const struct live *lv, int wd)
{
	unsigned n = __atomic_load_n(&lv->nrel_wd, __ATOMIC_ACQUIRE);

	for (unsigned i = 0; i < n; i++)
		if (__atomic_load_n(&lv->rel_wd[i], __ATOMIC_RELAXED) == wd)
			return true;
	return false;
}

/* A related file watched (once: inotify gives an inode's watch the same
 * number again). Without it, a related file rewritten in place is seen
 * only at the next look, up to refresh seconds later, and until then
 * unchecked reads answer its new bytes at the old version's addresses. */
static void watch_related(void *arg, const char *path)
{
	struct live *lv = arg;
	unsigned n = __atomic_load_n(&lv->nrel_wd, __ATOMIC_RELAXED);
	int wd;

	if (n >= LIVE_REL_WATCH_MAX)
		return;
	wd = inotify_add_watch(lv->ino_fd, path, IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVE_SELF |
			       IN_DELETE_SELF);
	if (wd < 0 || related_wd(lv, wd) || wd == __atomic_load_n(&lv->file_wd, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&lv->rel_wd[n], wd, __ATOMIC_RELAXED);
	__atomic_store_n(&lv->nrel_wd, n + 1, __ATOMIC_RELEASE);
}

/* Reads what inotify has for us (the watcher, or a reopen waiting for a
 * write's event): the time an event of FILE came (one on FILE itself, or
 * on its folder under its name). True when there were events: a thread
 * other than the watcher then kicks it (they may be changes to show). */
bool live_read_events(struct live *lv)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	const char *base = strrchr(lv->path, '/');
	bool any = false;
	ssize_t n;

	base = base ? base + 1 : lv->path;
	while ((n = read(lv->ino_fd, buf, sizeof(buf))) > 0) {
		int dir_wd = __atomic_load_n(&lv->dir_wd, __ATOMIC_RELAXED);

		for (ssize_t i = 0; i + (ssize_t)sizeof(struct inotify_event) <= n;) {
			const struct inotify_event *ev = (const struct inotify_event *)(buf + i);

			if (ev->wd == dir_wd ? ev->len && strcmp(ev->name, base) == 0 : !related_wd(lv, ev->wd))
				__atomic_store_n(&lv->event_ns, live_now_ns(), __ATOMIC_RELEASE);
			i += (ssize_t)sizeof(*ev) + ev->len;
		}
		any = true;
	}
	return any;
}

/* Whether /proc/PID/fdinfo/FD is a descriptor of inode ino open for writing
 * (fdinfo's "flags:" and "ino:" lines; reading it never touches the file,
 * which may be on this very mount). */
static bool fd_writes(const char *pid, const char *fd, unsigned long long ino)
{
	char path[96], line[128];
	unsigned long long i = 0;
	unsigned flags = 0;
	bool has_ino = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/fdinfo/%s", pid, fd);
	if (!(f = fopen(path, "re")))
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "flags: %o", &flags) == 1)
			continue;
		if (sscanf(line, "ino: %llu", &i) == 1)
			has_ino = true;
	}
	fclose(f);
	return has_ino && i == ino && (flags & O_ACCMODE) != O_RDONLY;
}

/* Whether another process has FILE open for writing: a write() still
 * copying its bytes in keeps it so. Looked up in /proc at most every 100
 * ms, and only once a change is LIVE_SETTLE_NS old with no event after it. */
static bool writer_open(struct live *lv)
{
	int64_t now = live_now_ns();
	char me[24];
	struct stat fst;
	struct dirent *p;
	bool found = false;
	DIR *proc;

	if (now - __atomic_load_n(&lv->wcheck_ns, __ATOMIC_RELAXED) < 100000000)
		return __atomic_load_n(&lv->wopen, __ATOMIC_RELAXED);
	if (stat(lv->path, &fst) != 0 || !(proc = opendir("/proc")))
		return false;
	snprintf(me, sizeof(me), "%ld", (long)getpid());
	while (!found && (p = readdir(proc))) {
		char dpath[64];
		struct dirent *e;
		DIR *fds;

		if (p->d_name[0] < '1' || p->d_name[0] > '9' || strcmp(p->d_name, me) == 0)
			continue;
		snprintf(dpath, sizeof(dpath), "/proc/%s/fd", p->d_name);
		if (!(fds = opendir(dpath)))
			continue;
		while (!found && (e = readdir(fds)))
			if (e->d_name[0] != '.')
				found = fd_writes(p->d_name, e->d_name, (unsigned long long)fst.st_ino);
		closedir(fds);
	}
	closedir(proc);
	__atomic_store_n(&lv->wopen, found, __ATOMIC_RELAXED);
	__atomic_store_n(&lv->wcheck_ns, now, __ATOMIC_RELAXED);
	return found;
}

/* Has every write that moved FILE's times to t returned? (See the top.)
 * An event of FILE after t says so. Where none came for LIVE_SETTLE_NS
 * (writers through mmap, file systems that send none), a FILE that no
 * other process has open for writing is taken as written: a write() still
 * copying its bytes in (one that takes longer than that on a loaded
 * machine) keeps its descriptor open, LIVE_WRITER_NS at most. */
bool live_writes_done(struct live *lv, int64_t t)
{
	int64_t age;

	if (!lv || lv->ino_fd < 0 || __atomic_load_n(&lv->file_wd, __ATOMIC_RELAXED) < 0 || !lv->local)
		return true;
	if (__atomic_load_n(&lv->event_ns, __ATOMIC_ACQUIRE) >= t)
		return true;
	age = live_now_ns() - t;
	return age >= LIVE_WRITER_NS || (age >= LIVE_SETTLE_NS && !writer_open(lv));
}

/* ---- the watcher ---------------------------------------------------------- */

/* The mount path of the group a path's last name is in. */
static char *live_dir_of(const char *path)
{
	const char *s = strrchr(path, '/');
	size_t n = s ? (size_t)(s - path) : 0;
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, path, n);
		d[n] = '\0';
	}
	return d;
}

void live_watch_path(struct live *lv)
{
	char *dir;

	if (lv->ino_fd < 0 || !lv->local)
		return;
	int wd = inotify_add_watch(lv->ino_fd, lv->path, IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVE_SELF |
			  IN_DELETE_SELF);

	/* the first watch: what was written before it sends no event, and
	 * counts as done (a write copying in at this instant is not seen) */
	if (wd >= 0 && __atomic_load_n(&lv->file_wd, __ATOMIC_RELAXED) < 0)
		__atomic_store_n(&lv->event_ns, live_now_ns(), __ATOMIC_RELEASE);
	if (wd >= 0)
		__atomic_store_n(&lv->file_wd, wd, __ATOMIC_RELAXED);
	dir = live_dir_of(lv->path);
	if (dir)
		__atomic_store_n(&lv->dir_wd, inotify_add_watch(lv->ino_fd, dir[0] ? dir : "/", IN_MOVED_TO | IN_CREATE | IN_DELETE),
				 __ATOMIC_RELAXED);
	free(dir);
}

/* The pause between a new generation and its sweep: none, or
 * H5FS_SWEEP_DELAY_MS for tests (a loaded machine's descheduled watcher:
 * requests meet nodes of the old generation meanwhile, test_views). */
static int64_t sweep_delay_ns(void)
{
	static int64_t v = -1;
	int64_t x = __atomic_load_n(&v, __ATOMIC_RELAXED);
	const char *e;

	if (x >= 0)
		return x;
	e = getenv("H5FS_SWEEP_DELAY_MS");
	x = e && *e ? (int64_t)strtoull(e, NULL, 10) * 1000000 : 0;
	__atomic_store_n(&v, x, __ATOMIC_RELAXED);
	return x;
}

/* One look at FILE (and the related files of its generation): a change
 * opens the next generation and re-resolves the nodes. The watcher's, or
 * a collection's one thread for all its members (live_start not called). */
void live_tick(h5fs *fs)
{
	struct live *lv = fs->lv;

	if (!fs->live)
		return;
	/* a remote FILE: one request, only when the mount was used */
	if (!lv->local && __atomic_exchange_n(&lv->accessed, false, __ATOMIC_RELAXED)) {
		struct gen *g = gen_current(fs);

		h5_file_probe(g->f);
		gen_release(g);
	}
	if (live_refresh(fs, false, true) == 1 && sweep_delay_ns())
		live_sleep_ns(sweep_delay_ns());
	h5_err_clear();
	lv->sweep(fs);   /* the member's node_sweep (live_new) */
	if (lv->local && lv->ino_fd >= 0 && __atomic_load_n(&lv->started, __ATOMIC_ACQUIRE)) {
		struct gen *g = gen_current(fs);

		h5_file_related_each(g->f, watch_related, lv);
		gen_release(g);
	}
}

static void *watcher(void *arg)
{
	h5fs *fs = arg;
	struct live *lv = fs->lv;

	for (;;) {
		struct pollfd p[2] = { { lv->wake[0], POLLIN, 0 }, { lv->ino_fd, POLLIN, 0 } };
		int r = poll(p, lv->ino_fd >= 0 ? 2 : 1, (int)(lv->refresh > 86400 ? 86400 : lv->refresh) * 1000);

		if (r < 0 && errno != EINTR)
			live_sleep_ns(100000000LL);
		if (p[0].revents) {
			char c = 'x';

			/* "k": a reopen read our events; else live_free stops us */
			if (read(lv->wake[0], &c, 1) != 1 || c != 'k')
				break;
		}
		if (lv->ino_fd >= 0 && p[1].revents)
			live_read_events(lv);
		live_tick(fs);
		/* while this mount holds FILE's lock the events are its own
		 * writes (a change by others is looked for when the lock is
		 * taken: h5_file_changed_by_others): a pause lets inotify merge
		 * them, not a wakeup per pwrite (cp -r of small files: a tenth
		 * of the daemon's time, issue 55) */
		pthread_mutex_lock(&fs->wmu);
		bool writing = pager_writing(&fs->pg);
		pthread_mutex_unlock(&fs->wmu);
		if (writing)
			live_sleep_ns(10000000LL);
	}
	return NULL;
}

/* From op_init: after fuse_daemonize's fork, whose child has no threads
 * of the parent. */
void live_start(h5fs *fs)
{
	struct live *lv = fs->lv;

	if (!fs->live || lv->started || pipe(lv->wake) != 0)
		return;
	for (int i = 0; i < 2; i++)
		fcntl(lv->wake[i], F_SETFD, FD_CLOEXEC);
	lv->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);   /* -1: poll only */
	live_watch_path(lv);
	if (pthread_create(&lv->thread, NULL, watcher, fs) == 0) {
		__atomic_store_n(&lv->started, true, __ATOMIC_RELEASE);
		return;
	}
	h5fs_log(fs, LOG_ERR, "cannot start the watcher of %s: changes are not shown", lv->path);
}

void h5fs_stop_watching(h5fs *fs)
{
	struct live *lv = fs ? fs->lv : NULL;

	if (!lv || !lv->started)
		return;
	(void)!write(lv->wake[1], "x", 1);
	pthread_join(lv->thread, NULL);
	__atomic_store_n(&lv->started, false, __ATOMIC_RELEASE);
}

void live_free(h5fs *fs)
{
	struct live *lv = fs->lv;

	if (!lv)
		return;
	h5fs_stop_watching(fs);
	for (int i = 0; i < 2; i++)
		if (lv->wake[i] >= 0)
			close(lv->wake[i]);
	if (lv->ino_fd >= 0)
		close(lv->ino_fd);
	for (size_t i = 0; i < lv->nretired; i++)
		free(lv->retired[i]);
	free(lv->retired);
	free(lv->path);
	free(lv->name);
	pthread_mutex_destroy(&lv->mu);
	free(lv);
	fs->lv = NULL;
}

