/* log.c - one log line per event (the errno an engine error becomes
 * is src/common/h5errno.c's). */
#include "fs.h"

#include <time.h>

/* ---- logging ------------------------------------------------------------ */

/* The process's one log destination (h5fs_log_to). A state file
 * (h5fs_log_to_state) is rotated: path and max set, size counted. */
static struct {
	int fd;
	bool syslog, stderr_on;
	char *path;
	uint64_t max, size;
	pthread_mutex_t mu;     /* the size and the rotation */
} logto = { -1, false, true, NULL, 0, 0, PTHREAD_MUTEX_INITIALIZER };

int h5fs_log_to_state(const char *path, uint64_t max)
{
	struct stat st;
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0)
		return errno;
	free(logto.path);
	logto.path = strdup(path);
	if (!logto.path) {
		close(fd);
		return ENOMEM;
	}
	logto.size = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
	logto.max = max;
	logto.fd = fd;
	logto.syslog = false;
	logto.stderr_on = false;
	return 0;
}

/* Before a line of n bytes: a state file that would pass its bound
 * becomes path.1 and a new one takes its descriptor (dup2: a thread
 * writing meanwhile writes to one or the other, whole). */
static void rotate(size_t n)
{
	char old[PATH_MAX];
	int fd;

	if (!logto.path)
		return;
	pthread_mutex_lock(&logto.mu);
	if (logto.size + n > logto.max && logto.size > 0 &&
	    snprintf(old, sizeof(old), "%s.1", logto.path) < (int)sizeof(old) && rename(logto.path, old) == 0) {
		fd = open(logto.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd >= 0) {
			dup2(fd, logto.fd);
			close(fd);
		}
		logto.size = 0;
	}
	logto.size += n;
	pthread_mutex_unlock(&logto.mu);
}

void h5fs_log_to(int log_fd, int use_syslog, int use_stderr)
{
	logto.fd = log_fd;
	logto.syslog = use_syslog;
	logto.stderr_on = use_stderr;
}

/* One write per line, so lines of concurrent threads never mix; a line
 * snprintf cut to fit (len >= cap) still ends in a newline. */
static void put_line(int fd, char *line, size_t len, size_t cap)
{
	if (len >= cap) {
		len = cap - 1;
		line[len - 1] = '\n';
	}
	if (write(fd, line, len) < 0) {
		/* nowhere left to report it */
	}
}

static void cfg_vlog(const h5fs_config *cfg, int prio, const char *fmt, va_list ap)
{
	char msg[1024], line[1100];
	int n;

	if (prio >= LOG_DEBUG ? !cfg->debug : prio >= LOG_INFO && !(cfg->verbose || cfg->debug))
		return;
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (n < 0)
		return;
	if (logto.syslog)
		syslog(prio, "%s", msg);
	if (logto.fd >= 0) {
		struct timespec ts;
		struct tm tm;

		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		n = snprintf(line, sizeof(line), "%04d-%02d-%02d %02d:%02d:%02d h5fs[%ld]: %s\n", tm.tm_year + 1900,
			     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)getpid(), msg);
		if (n > 0) {
			rotate((size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
			put_line(logto.fd, line, (size_t)n, sizeof(line));
		}
	}
	if (logto.stderr_on) {
		n = snprintf(line, sizeof(line), "h5fs: %s\n", msg);
		if (n > 0)
			put_line(STDERR_FILENO, line, (size_t)n, sizeof(line));
	}
}

void h5fs_log(const h5fs *fs, int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (fs->label) {
		/* a member of a collection: which file the line is about */
		char msg[1024];

		vsnprintf(msg, sizeof(msg), fmt, ap);
		h5fs_log_cfg(&fs->cfg, prio, "%s: %s", fs->label, msg);
	} else {
		cfg_vlog(&fs->cfg, prio, fmt, ap);
	}
	va_end(ap);
}

void h5fs_log_cfg(const h5fs_config *cfg, int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cfg_vlog(cfg, prio, fmt, ap);
	va_end(ap);
}

const char *show_path(const char *p)
{
	return p && *p ? p : "/";
}

/* Reply with the errno for an engine error; every EIO is logged, once, with
 * the object (mount path, and its object header address when known: addr
 * UINT64_MAX if not) and the engine's message (read in the thread that
 * failed). */
int h5err_logged(h5fs *fs, int rc, const char *op, const char *path, const char *name, uint64_t addr)
{
	int e = h5fs_errno(rc);
	char where[48] = "";
	const char *dir = name ? (path ? path : "") : show_path(path);   /* "/x", not "//x" */

	if (addr != UINT64_MAX)
		snprintf(where, sizeof(where), " (object header 0x%llx)", (unsigned long long)addr);
	if (e == EIO)
		h5fs_log(fs, LOG_ERR, "%s %s%s%s%s: EIO: %s", op, dir, name ? "/" : "",
		       name ? name : "", where, h5_err_msg());
	else
		h5fs_log(fs, LOG_DEBUG, "%s %s%s%s%s: %s (%s)", op, dir, name ? "/" : "",
		       name ? name : "", where, strerror(e), h5_err_msg());
	return e;
}

void reply_h5err_obj(h5fs *fs, fuse_req_t req, int rc, const char *op, const char *path,
			    const char *name, uint64_t addr)
{
	fuse_reply_err(req, h5err_logged(fs, rc, op, path, name, addr));
}

void reply_h5err(h5fs *fs, fuse_req_t req, int rc, const char *op, const char *path,
			const char *name)
{
	reply_h5err_obj(fs, req, rc, op, path, name, UINT64_MAX);
}

/* ---- changes lost after their answer ------------------------------------ */

static int lost_count;

void h5fs_lost_note(void)
{
	__atomic_add_fetch(&lost_count, 1, __ATOMIC_RELAXED);
}

int h5fs_lost_any(void)
{
	return __atomic_load_n(&lost_count, __ATOMIC_RELAXED) != 0;
}
