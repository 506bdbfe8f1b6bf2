/* curl_dl.c - libcurl loaded on first use (curl_dl.h says why). */
#include <config.h>
#include "base.h"
#include "curl_dl.h"

#include <dlfcn.h>
#include <pthread.h>

struct h5_curl_fns h5_curl;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_rc;
static char load_err[256];

/* The name libcurl 7 and 8 install (SONAME 4); Debian's GnuTLS build
 * under its own name, the same API. */
static const char *const names[] = { "libcurl.so.4", "libcurl-gnutls.so.4" };

static void load(void)
{
	void *lib = NULL;

	for (size_t i = 0; !lib && i < sizeof(names) / sizeof(names[0]); i++)
		lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(load_err, sizeof(load_err), "libcurl could not be loaded (%s)", dlerror());
		load_rc = -1;
		return;
	}
#define H5_CURL_SYM(name) \
	if (load_rc == 0 && !(*(void **)&h5_curl.p_##name = dlsym(lib, #name))) { \
		snprintf(load_err, sizeof(load_err), "libcurl has no %s: too old (7.75 or later needed)", #name); \
		load_rc = -1; \
	}
	H5_CURL_FUNCTIONS(H5_CURL_SYM)
#undef H5_CURL_SYM
	if (load_rc == 0)
		curl_global_init(CURL_GLOBAL_DEFAULT); /* not thread-safe: here, once */
}

int h5_curl_init(void)
{
	pthread_once(&once, load);
	if (load_rc < 0)
		return h5_err_set(H5_ERR_UNSUPPORTED, "%s: http://, https:// and s3:// need it", load_err);
	return 0;
}
