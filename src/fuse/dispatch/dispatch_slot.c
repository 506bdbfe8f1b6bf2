/* dispatch_slot.c - the mount's table of roots (dispatch.h): building
 * it, and the member slots of a collection, opened at first use and
 * closed, least recently used first, when more than max_files
 * descriptors on files under DIR would be open (default: half the soft
 * RLIMIT_NOFILE); closed too when their root says its file changed (an
 * indexed member of a live mount, root op changed), the kernel's
 * entries of them then dropped by the collection's watcher thread. */
#include "dispatch_int.h"
#include "hash.h"

#include <sys/resource.h>
#include <time.h>

/* How long a request waits for another request to let go of a
 * descriptor when max_files are all in use by requests in flight, before
 * it fails with EMFILE (0.5 s). A request alone in flight fails at once: only it
 * could let go (a chain of external links longer than max_files). */
#define SLOT_WAIT_MS 500
/* The same for a descriptor asked in the middle of a request (a virtual
 * dataset's source, an external link's target: slots_reserve), whose
 * member is open already: failing it is an EIO for a read that would
 * finish once another request lets go (issue 45 item 3: six readers of
 * three virtual datasets over 30 members under ulimit -n 40). */
#define SLOT_WAIT_GATE_MS 10000
/* Idle members closed in turn when the kernel refuses a member's open
 * (EMFILE, ENFILE) before it fails; when none is idle, a wait of at most
 * SHED_WAIT_MS for one each time (so at most 0.8 s in all). A descriptor
 * asked in the middle of a request (a virtual dataset's source) waits as
 * the gate does, SLOT_WAIT_GATE_MS in all: the members in use are held by
 * readers that let go once their file is read. */
#define SHED_TRIES 8
#define SHED_WAIT_MS 100

/* Half the soft RLIMIT_NOFILE, at most 1,024 (issue 25). */
unsigned h5fs_default_max_files(void)
{
	struct rlimit rl;
	rlim_t v = 1024;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur / 2 < v)
		v = rl.rlim_cur / 2;
	return v ? (unsigned)v : 1;
}

int mount_new(h5fs_mount **out, const h5fs_config *cfg, bool identity)
{
	h5fs_mount *m = calloc(1, sizeof(*m));

	*out = NULL;
	if (!m)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	m->cfg = *cfg;
	m->identity = identity;
	m->open.onext = m->open.oprev = &m->open;
	m->path_cap = 1024;
	m->by_path = calloc(m->path_cap, sizeof(*m->by_path));
	pthread_mutex_init(&m->mu, NULL);
	pthread_cond_init(&m->cv, NULL);
	pthread_cond_init(&m->stop_cv, NULL);
	/* the folders' top takes FUSE_ROOT_ID (h5fs_mount_collection) */
	if (idmap_init(&m->ids, FUSE_ROOT_ID) < 0 || !m->by_path) {
		h5fs_mount_free(m);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	*out = m;
	return 0;
}

int slot_add(struct slot **out, h5fs_mount *m, const struct root_ops *ops, void *r)
{
	struct slot *s;

	*out = NULL;
	if (m->nslots == m->slots_cap) {
		size_t ncap = m->slots_cap ? m->slots_cap * 2 : 16;
		struct slot **ns = realloc(m->slots, ncap * sizeof(*ns));

		if (!ns)
			return ENOMEM;
		m->slots = ns;
		m->slots_cap = ncap;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return ENOMEM;
	s->m = m;
	s->ops = ops;
	s->r = r;
	s->idx = (uint32_t)m->nslots;
	m->slots[m->nslots++] = s;
	*out = s;
	return 0;
}

int h5fs_mount_single(h5fs_mount **out, h5fs *fs)
{
	struct slot *s;
	int rc = mount_new(out, h5fs_cfg(fs), true);

	if (rc < 0)
		return rc;
	if (slot_add(&s, *out, &h5fs_member_ops, fs) != 0) {
		h5fs_mount_free(*out);
		*out = NULL;
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	return 0;
}

static void slot_close(h5fs_mount *m, struct slot *s)
{
	void *r = s->r;

	s->opening = true;
	s->r = NULL;
	m->open_members--;
	s->oprev->onext = s->onext;
	s->onext->oprev = s->oprev;
	s->onext = s->oprev = NULL;
	pthread_mutex_unlock(&m->mu);
	if (m->started && s->ops->stop)
		s->ops->stop(r);
	s->ops->free(r);
	pthread_mutex_lock(&m->mu);
	s->opening = false;
	pthread_cond_broadcast(&m->cv);
}

/* The CLOCK_REALTIME time (pthread_cond_timedwait's) ms from now. */
static void deadline_in(struct timespec *until, long ms)
{
	clock_gettime(CLOCK_REALTIME, until);
	until->tv_sec += ms / 1000;
	until->tv_nsec += (ms % 1000) * 1000000L;
	if (until->tv_nsec >= 1000000000L) {
		until->tv_sec++;
		until->tv_nsec -= 1000000000L;
	}
}

/* m->waiters changes under m->mu but is read without it (root_coll.c
 * fds_add), so atomically, in one order with the descriptor count. */
static void waiters_add(h5fs_mount *m, int d)
{
	__atomic_add_fetch(&m->waiters, (unsigned)d, __ATOMIC_SEQ_CST);
}

/* Descriptors on files under DIR now: one per member open or being
 * opened, and those counted by the collection (plain files, signature
 * reads, the related files of members: coll_gate). */
static unsigned fds_now_locked(h5fs_mount *m)
{
	return m->open_members + (m->hooks && m->hooks->fds ? m->hooks->fds(m->coll) : 0);
}

/* s was used now: the open list stays in order of use, most recent
 * first, so the least recently used idle member is found from the back
 * (a scan of every open member per close cost 4% of a walk of 10,000
 * members with 1,024 open). m->mu held. */
void slot_touch_locked(h5fs_mount *m, struct slot *s)
{
	if (!s->onext || m->open.onext == s)
		return;
	s->oprev->onext = s->onext;
	s->onext->oprev = s->oprev;
	s->onext = m->open.onext;
	s->oprev = &m->open;
	m->open.onext->oprev = s;
	m->open.onext = s;
}

/* The least recently used member no request uses, or NULL. m->mu held. */
static struct slot *idle_lru_locked(h5fs_mount *m)
{
	for (struct slot *s = m->open.oprev; s != &m->open; s = s->oprev)
		if (!s->opening && !s->busy && !s->pins && s->ops->idle(s->r))
			return s;
	return NULL;
}

void slots_trim_locked(h5fs_mount *m, unsigned want)
{
	while (m->max_files && fds_now_locked(m) + want > m->max_files) {
		struct slot *lru = idle_lru_locked(m);

		if (!lru)
			return;
		slot_close(m, lru);
	}
}

int slots_shed(h5fs_mount *m, bool in_request)
{
	long wait_ms = in_request ? SLOT_WAIT_GATE_MS / SHED_TRIES : SHED_WAIT_MS;
	struct slot *lru;
	int e = 0;

	pthread_mutex_lock(&m->mu);
	lru = idle_lru_locked(m);
	if (lru) {
		slot_close(m, lru);
	} else if (m->inflight <= (in_request ? 1u : 0u)) {
		e = EMFILE;     /* only this request could let go of one */
	} else {
		/* every member in use: a while for another request to let go
		 * of one, or of a descriptor (FUSE's pipes, one pair per
		 * thread, share the daemon's half of a low limit) */
		struct timespec until;

		deadline_in(&until, wait_ms);
		waiters_add(m, 1);
		e = pthread_cond_timedwait(&m->cv, &m->mu, &until) == 0 ? 0 : EMFILE;
		waiters_add(m, -1);
	}
	pthread_mutex_unlock(&m->mu);
	return e;
}

/* Room for `want` more descriptors (closing idle members, waiting a while
 * for busy ones to finish): 0 or EMFILE. own: the requests in flight that
 * are the caller's (1 inside a request; 0 for one not yet entered,
 * slot_enter), which it would wait for in vain. m->mu held. */
static int room_locked(h5fs_mount *m, unsigned want, long wait_ms, unsigned own)
{
	struct timespec until;
	int e;

	deadline_in(&until, wait_ms);
	for (;;) {
		slots_trim_locked(m, want);
		if (!m->max_files || fds_now_locked(m) + want <= m->max_files)
			return 0;
		if (m->inflight <= own || wait_ms <= 0)
			return EMFILE;
		waiters_add(m, 1);
		/* looked at again once counted: a descriptor given back
		 * meanwhile, outside m->mu (root_coll.c fds_add), is either
		 * seen here or sees this waiter and wakes it */
		if (fds_now_locked(m) + want <= m->max_files) {
			waiters_add(m, -1);
			return 0;
		}
		e = pthread_cond_timedwait(&m->cv, &m->mu, &until);
		waiters_add(m, -1);
		if (e != 0)
			return EMFILE;
	}
}

int slots_reserve(h5fs_mount *m, bool wait)
{
	int e;

	pthread_mutex_lock(&m->mu);
	e = room_locked(m, 1, wait ? SLOT_WAIT_GATE_MS : 0, 1);
	pthread_mutex_unlock(&m->mu);
	if (e && wait)  /* one who does not wait has a way without it */
		h5fs_log_cfg(&m->cfg, LOG_WARNING, "-o max_files=%u: every descriptor is in use: EMFILE",
			     m->max_files);
	return e;
}

/* The member's root r said its file changed (root op changed): closed
 * now unless in use (then by the first request that finds it unused), so
 * that it opens anew, live; the watcher then tells the kernel to drop
 * what it holds of it. m->mu held. */
static void close_changed_locked(h5fs_mount *m, struct slot *s, void *r)
{
	while (s->opening)
		pthread_cond_wait(&m->cv, &m->mu);
	if (s->r != r)
		return;         /* closed (or opened anew) meanwhile */
	s->changed = true;
	s->inval = true;
	if (s->busy || s->pins)
		return;
	h5fs_log_cfg(&m->cfg, LOG_INFO, "%s: changed since it was indexed: opened live", s->path);
	slot_close(m, s);
}

void slot_file_changed(h5fs_mount *m, struct slot *s)
{
	pthread_mutex_lock(&m->mu);
	s->changed = true;
	s->inval = true;
	pthread_mutex_unlock(&m->mu);
}

/* A request's look for a change of its member's file (at most once per
 * refresh interval, by the root: a stat, made without m->mu). */
void slot_check_changed_locked(h5fs_mount *m, struct slot *s)
{
	const struct root_ops *ops = s->ops;
	void *r = s->r;
	bool ch;

	if (!r || !ops->changed || !m->cfg.read_only || !m->cfg.refresh)
		return;         /* only a live mount looks */
	s->busy++;              /* not closed while it looks */
	pthread_mutex_unlock(&m->mu);
	ch = ops->changed(r, true);
	pthread_mutex_lock(&m->mu);
	s->busy--;
	if (ch)
		close_changed_locked(m, s, r);
}

int slot_enter(h5fs_mount *m, struct slot *s)
{
	int e = 0;

	pthread_mutex_lock(&m->mu);
	/* Each step below may let go of m->mu (the look for a change, room
	 * made by closing another member, the wait for room), and another
	 * request may open s meanwhile: looked at again until s is open or
	 * this request opens it. Two opens of one member made one slot hold
	 * two roots and sit twice in the open list: handles of the first
	 * root were then read through the second (a SIGSEGV with two
	 * readers of virtual datasets under ulimit -n 40, issue 45). */
	for (;;) {
		void *r = NULL;

		while (s->opening)
			pthread_cond_wait(&m->cv, &m->mu);
		slot_check_changed_locked(m, s);
		if (s->opening)
			continue;
		if (!s->path || s->r)
			break;
		/* (not yet counted in flight: one other request in flight
		 * is one to wait for) */
		e = room_locked(m, 1, SLOT_WAIT_MS, 0);
		if (e) {
			pthread_mutex_unlock(&m->mu);
			h5fs_log_cfg(&m->cfg, LOG_WARNING, "open %s: -o max_files=%u: every descriptor is in use: "
				     "EMFILE", s->path, m->max_files);
			return e;
		}
		if (s->opening || s->r)
			continue;       /* opened by another request meanwhile */
		s->opening = true;
		m->open_members++;      /* counted while it opens */
		pthread_mutex_unlock(&m->mu);
		e = m->hooks->open_member(m->coll, &r, s->path, s);
		/* the kernel's limit reached before max_files (the daemon's
		 * other descriptors: FUSE's pipes, the index; a low
		 * RLIMIT_NOFILE): an idle member closed, the open tried again */
		for (int tries = 0; e == EMFILE && tries < SHED_TRIES && slots_shed(m, false) == 0; tries++)
			e = m->hooks->open_member(m->coll, &r, s->path, s);
		if (e == EMFILE)
			h5fs_log_cfg(&m->cfg, LOG_WARNING, "open %s: no descriptor left (open-file limit), none idle "
				     "to close: EMFILE", s->path);
		if (!e && m->started && s->ops->start)
			s->ops->start(r, m->se);
		pthread_mutex_lock(&m->mu);
		s->opening = false;
		if (e) {
			m->open_members--;
		} else {
			s->r = r;
			s->epoch++;
			s->onext = m->open.onext;
			s->oprev = &m->open;
			m->open.onext->oprev = s;
			m->open.onext = s;
		}
		pthread_cond_broadcast(&m->cv);
		break;
	}
	if (!e) {
		s->busy++;
		m->inflight++;
		slot_touch_locked(m, s);
	}
	pthread_mutex_unlock(&m->mu);
	return e;
}

void slot_leave(h5fs_mount *m, struct slot *s)
{
	pthread_mutex_lock(&m->mu);
	s->busy--;
	m->inflight--;
	slot_touch_locked(m, s);
	if (m->waiters)         /* a request waiting for room may close it now */
		pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
}

void slot_pin(h5fs_mount *m, struct slot *s, struct hnode *n)
{
	pthread_mutex_lock(&m->mu);
	s->pins++;
	n->prev = NULL;
	n->next = m->handles;
	if (m->handles)
		m->handles->prev = n;
	m->handles = n;
	pthread_mutex_unlock(&m->mu);
}

void slot_unpin(h5fs_mount *m, struct slot *s, struct hnode *n)
{
	pthread_mutex_lock(&m->mu);
	s->pins--;
	if (n->prev)
		n->prev->next = n->next;
	else
		m->handles = n->next;
	if (n->next)
		n->next->prev = n->prev;
	if (m->waiters)
		pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
}

/* The member slot of the folder root's id (made on first sight, closed):
 * t->s, not entered. */
int slot_member(struct target *t, h5fs_mount *m, uint64_t folder_ino, const struct stat *top, double timeout)
{
	size_t b = hash_u64(folder_ino, m->path_cap);
	struct slot *s;
	char *path;
	int e = 0;

	memset(t, 0, sizeof(*t));
	pthread_mutex_lock(&m->mu);
	for (s = m->by_path[b]; s && s->folder_ino != folder_ino; s = s->next)
		;
	pthread_mutex_unlock(&m->mu);
	if (!s) {
		path = m->hooks->member_path(m->coll, folder_ino);
		if (!path)
			return ENOMEM;
		pthread_mutex_lock(&m->mu);
		for (s = m->by_path[b]; s && s->folder_ino != folder_ino; s = s->next)
			;
		if (!s) {
			e = slot_add(&s, m, &h5fs_member_ops, NULL);
			if (!e) {
				s->path = path;
				path = NULL;
				s->folder_ino = folder_ino;
				s->next = m->by_path[b];
				m->by_path[b] = s;
			}
		}
		pthread_mutex_unlock(&m->mu);
		free(path);
		if (e)
			return e;
	}
	pthread_mutex_lock(&m->mu);
	s->top = *top;
	s->top_timeout = timeout;
	pthread_mutex_unlock(&m->mu);
	t->s = s;
	t->local = FUSE_ROOT_ID;
	return 0;
}

struct inval {
	uint64_t g, parent;
	char *name;
};

struct invals {
	struct inval *v;
	size_t n, cap;
};

static void inval_add(void *arg, const struct gid *x)
{
	struct invals *iv = arg;

	if (iv->n == iv->cap) {
		size_t nc = iv->cap ? iv->cap * 2 : 64;
		struct inval *nv = realloc(iv->v, nc * sizeof(*nv));

		if (!nv)
			return;         /* what is not dropped expires (timeouts) */
		iv->v = nv;
		iv->cap = nc;
	}
	iv->v[iv->n].g = x->g;
	iv->v[iv->n].parent = x->parent;
	iv->v[iv->n].name = x->name ? strdup(x->name) : NULL;
	iv->n++;
}

/* The kernel drops its entries and attributes (and cached pages) of the
 * members closed because their file changed, as a live FILE's watcher
 * does after a new generation (live/live.c): every node id it was given of
 * them, the member's own entry in its folder included. Ids that keep
 * their number across openings (datasets) would otherwise keep pages of
 * the old file. From the watcher's thread (never a request's: an
 * invalidation may wait for locks a request holds). m->mu held, let go
 * while the kernel is told. */
static void inval_changed_locked(h5fs_mount *m)
{
	struct invals iv = { 0 };

	for (size_t i = 0; i < m->nslots; i++) {
		if (!m->slots[i]->inval)
			continue;
		m->slots[i]->inval = false;
		idmap_each(&m->ids, m->slots[i]->idx, inval_add, &iv);
	}
	if (!iv.n)
		return;
	pthread_mutex_unlock(&m->mu);
	for (size_t i = 0; i < iv.n; i++) {
		if (m->se && iv.v[i].parent && iv.v[i].name)
			notify_inval_entry(m->se, iv.v[i].parent, iv.v[i].name,
							 strlen(iv.v[i].name));
		if (m->se)
			notify_inval_inode(m->se, iv.v[i].g, 0, 0);
		free(iv.v[i].name);
	}
	free(iv.v);
	pthread_mutex_lock(&m->mu);
}

/* Every refresh seconds, each open member looks for changes of its file
 * (live/live.c live_tick; an indexed root: root op changed, when a request
 * came since its last look), held busy meanwhile so it is not closed:
 * one at a time. A member's tick may wait for the notification thread
 * (node_sweep's notify_flush), which waits for the LOOKUPs under way
 * (kit/notify.h's gate); a LOOKUP may wait for a descriptor (a member
 * replaced in DIR: its signature read, slots_reserve), which it gets by
 * closing an idle member. Holding every open member busy for the whole
 * round left none to close under -o max_files: the LOOKUP, the gate and
 * the tick waited on one another until the gate gave up (5 s; a live
 * collection showed a replaced member's old bytes that long, under load
 * past test_collection's 10 s). Slots are never freed while mounted. */
static void *ticker(void *arg)
{
	h5fs_mount *m = arg;
	struct slot **v = NULL;
	size_t cap = 0;

	pthread_mutex_lock(&m->mu);
	while (!m->stopping) {
		struct timespec until;
		struct slot *s;
		size_t n = 0, i;

		deadline_in(&until, (long)m->cfg.refresh * 1000);
		while (!m->stopping && pthread_cond_timedwait(&m->stop_cv, &m->mu, &until) == 0)
			;
		if (m->stopping)
			break;
		for (s = m->open.onext; s != &m->open; s = s->onext) {
			if (s->opening || (!s->ops->tick && !s->ops->changed))
				continue;
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 64;
				struct slot **nv = realloc(v, nc * sizeof(*nv));

				if (!nv)
					break;
				v = nv;
				cap = nc;
			}
			v[n++] = s;
		}
		pthread_mutex_unlock(&m->mu);
		for (i = 0; i < n; i++) {
			void *r;
			bool ch = false;

			/* still open (it may have been closed or opened anew
			 * since the list was made: then it is the new root's
			 * look) */
			pthread_mutex_lock(&m->mu);
			r = v[i]->r;
			if (!r || v[i]->opening || m->stopping) {
				pthread_mutex_unlock(&m->mu);
				continue;
			}
			v[i]->busy++;
			m->inflight++;
			pthread_mutex_unlock(&m->mu);
			if (v[i]->ops->tick)
				v[i]->ops->tick(r);
			if (v[i]->ops->changed)
				ch = v[i]->ops->changed(r, false);
			slot_leave(m, v[i]);
			if (ch) {
				pthread_mutex_lock(&m->mu);
				close_changed_locked(m, v[i], r);
				pthread_mutex_unlock(&m->mu);
			}
		}
		pthread_mutex_lock(&m->mu);
		inval_changed_locked(m);
	}
	pthread_mutex_unlock(&m->mu);
	free(v);
	return NULL;
}

void slots_start(h5fs_mount *m)
{
	size_t i;

	pthread_mutex_lock(&m->mu);
	m->started = true;
	if (!m->identity && m->cfg.refresh && !m->ticking)
		m->ticking = pthread_create(&m->ticker, NULL, ticker, m) == 0;
	for (i = 0; i < m->nslots; i++) {
		struct slot *s = m->slots[i];

		if (s->r && s->ops->start)
			s->ops->start(s->r, m->se);
	}
	pthread_mutex_unlock(&m->mu);
}

void slots_usage(h5fs_mount *m, uint64_t *bytes, uint64_t *objects)
{
	size_t i;

	*bytes = *objects = 0;
	pthread_mutex_lock(&m->mu);
	for (i = 0; i < m->nslots; i++) {
		struct slot *s = m->slots[i];
		uint64_t b = 0, o = 0;

		if (s->r && !s->opening && s->ops->usage)
			s->ops->usage(s->r, &b, &o);
		*bytes += b;
		*objects += o;
	}
	if (!m->identity)
		*objects += m->ids.n;
	pthread_mutex_unlock(&m->mu);
}

void h5fs_mount_set_session(h5fs_mount *m, struct fuse_session *se)
{
	m->se = se;
}

void handle_close(h5fs_mount *m, struct hnode *n, const struct fuse_file_info *fi)
{
	if (n->dir) {
		struct dhandle *h = (struct dhandle *)n;

		h->s->ops->releasedir(h->s->r, h->dh);
		slot_unpin(m, h->s, n);
		free(h);
	} else {
		struct fhandle *h = (struct fhandle *)n;
		struct fuse_file_info rfi = fi ? *fi : (struct fuse_file_info){ 0 };

		rfi.fh = h->fh;
		h->s->ops->release(h->s->r, h->local, &rfi);
		slot_unpin(m, h->s, n);
		free(h);
	}
}

/* The handles whose RELEASE or RELEASEDIR the unmount dropped (the
 * kernel sends them in the background; what is still queued when the
 * connection ends never comes): released as the kernel would have. The
 * session loop has ended. */
static void handles_release(h5fs_mount *m)
{
	while (m->handles)
		handle_close(m, m->handles, NULL);
}

void h5fs_mount_stop(h5fs_mount *m)
{
	size_t i;

	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	m->stopping = true;
	pthread_cond_broadcast(&m->stop_cv);
	pthread_mutex_unlock(&m->mu);
	if (m->ticking)
		pthread_join(m->ticker, NULL);
	m->ticking = false;
	/* Each root stops outside m->mu: a root's stop takes its own lock,
	 * under which its lookups may open files through this table
	 * (slots_reserve, an external link in a collection member). The
	 * session loop has ended: no request changes the slots meanwhile. */
	pthread_mutex_lock(&m->mu);
	m->started = false;
	pthread_mutex_unlock(&m->mu);
	handles_release(m);
	for (i = 0; i < m->nslots; i++) {
		struct slot *s = m->slots[i];

		if (s->r && s->ops->stop)
			s->ops->stop(s->r);
	}
}

void h5fs_mount_free(h5fs_mount *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->nslots; i++) {
		struct slot *s = m->slots[i];

		if (s->r)
			s->ops->free(s->r);
		free(s->path);
		free(s);
	}
	idmap_free(&m->ids);
	if (m->coll_free)
		m->coll_free(m->coll);
	free(m->slots);
	free(m->by_path);
	pthread_mutex_destroy(&m->mu);
	pthread_cond_destroy(&m->cv);
	pthread_cond_destroy(&m->stop_cv);
	free(m);
}
