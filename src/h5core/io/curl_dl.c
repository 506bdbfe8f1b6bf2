/* curl_dl.c - libcurl loaded on first use (curl_dl.h says why; base/dl.c
 * does the loading). */
#include <config.h>
#include "base.h"
#include "dl.h"
#include "curl_dl.h"

struct h5_curl_fns h5_curl;

/* The name libcurl 7 and 8 install (SONAME 4); Debian's GnuTLS build
 * under its own name, the same API. */
static const char *const names[] = { "libcurl.so.4", "libcurl-gnutls.so.4", NULL };

/* H5_DL_SLOT spelled out: curl_dl.h's names are already macros here, and
 * an argument passed on to H5_DL_SLOT would be expanded */
#define H5_CURL_SLOT(name) { #name, (void **)&h5_curl.p_##name },
static const h5_dl_sym syms[] = { H5_CURL_FUNCTIONS(H5_CURL_SLOT) { NULL, NULL } };

static void ready(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT); /* not thread-safe: here, once */
}

static h5_dl curl_lib = {
	.what = "http://, https:// and s3://", .package = "libcurl4", .names = names, .syms = syms,
	.min_version = "7.75", .ready = ready,
};

int h5_curl_init(void)
{
	return h5_dl_need(&curl_lib);
}
