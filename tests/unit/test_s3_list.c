/* test_s3_list.c - the ListObjectsV2 page decoder (source_s3_list.c,
 * h5_s3_list_decode) on (buf, len): pages appended one after the other
 * (continuation tokens), common prefixes as folders, entities and UTF-8
 * in keys, LastModified as nanoseconds, and every malformed page (cut
 * short anywhere, garbage, an <Error> document, keys outside the prefix)
 * refused with a message, never half-read. */
#include "testutil.h"

#define HEAD "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" \
	"<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"

static const char page1[] = HEAD
	"<Name>bucket</Name><Prefix>run/</Prefix><KeyCount>3</KeyCount><MaxKeys>3</MaxKeys>"
	"<Delimiter>/</Delimiter><IsTruncated>true</IsTruncated>"
	"<NextContinuationToken>tok+/=1</NextContinuationToken>"
	"<Contents><Key>run/</Key><LastModified>2009-10-12T17:50:30.000Z</LastModified>"
	"<ETag>&quot;d41d8&quot;</ETag><Size>0</Size><StorageClass>STANDARD</StorageClass></Contents>"
	"<Contents><Key>run/b.h5</Key><LastModified>2009-10-12T17:50:30.123Z</LastModified>"
	"<ETag>&quot;abc&quot;</ETag><Size>18446744073709551615</Size><StorageClass>STANDARD</StorageClass>"
	"</Contents>"
	"<CommonPrefixes><Prefix>run/sub/</Prefix></CommonPrefixes>"
	"</ListBucketResult>";

static const char page2[] = HEAD
	"<Name>bucket</Name><Prefix>run/</Prefix><ContinuationToken>tok+/=1</ContinuationToken>"
	"<IsTruncated>false</IsTruncated>"
	"<Contents>\n  <Key>run/a &amp; b &lt;c&gt; &#233;&#x1F600;\xc3\xa9.h5</Key>\n"
	"  <LastModified>1970-01-01T00:00:00Z</LastModified><ETag>\"e\"</ETag><Size>42</Size>\n</Contents>"
	"<CommonPrefixes><Prefix>run/sub/</Prefix></CommonPrefixes>" /* again: dropped by sort */
	"<CommonPrefixes><Prefix>run//</Prefix></CommonPrefixes>"    /* an empty name: left out */
	"<!-- a comment --><Contents><Key>run/<![CDATA[x<y>&amp;]]>z</Key><Size>7</Size></Contents>"
	"<EmptyElement/>"
	"</ListBucketResult>\n";

START_TEST(test_pages)
{
	h5_s3_listing l = { 0 };

	ck_assert_int_eq(h5_s3_list_decode(&l, "run/", page1, strlen(page1)), 0);
	ck_assert_int_eq(l.truncated, 1);
	ck_assert_str_eq(l.next_token, "tok+/=1");
	/* the "folder" object run/ itself is no entry */
	ck_assert_uint_eq(l.n, 2);
	ck_assert_str_eq(l.v[0].name, "b.h5");
	ck_assert_int_eq(l.v[0].is_prefix, 0);
	ck_assert_uint_eq(l.v[0].size, UINT64_MAX);
	ck_assert_int_eq(l.v[0].mtime_ns, 1255369830123000000LL);
	ck_assert_str_eq(l.v[0].etag, "\"abc\"");
	ck_assert_str_eq(l.v[1].name, "sub");
	ck_assert_int_eq(l.v[1].is_prefix, 1);
	ck_assert_ptr_null(l.v[1].etag);

	ck_assert_int_eq(h5_s3_list_decode(&l, "run/", page2, strlen(page2)), 0);
	ck_assert_int_eq(l.truncated, 0);
	ck_assert_ptr_null(l.next_token);
	ck_assert_uint_eq(l.n, 5);
	h5_s3_listing_sort(&l);
	ck_assert_uint_eq(l.n, 4);
	ck_assert_str_eq(l.v[0].name, "a & b <c> \xc3\xa9\xf0\x9f\x98\x80\xc3\xa9.h5");
	ck_assert_uint_eq(l.v[0].size, 42);
	ck_assert_int_eq(l.v[0].mtime_ns, 0);
	ck_assert_str_eq(l.v[1].name, "b.h5");
	ck_assert_str_eq(l.v[2].name, "sub");
	ck_assert_int_eq(l.v[2].is_prefix, 1);
	/* CDATA is taken as is (no entity decoding inside) */
	ck_assert_str_eq(l.v[3].name, "x<y>&amp;z");
	ck_assert_int_eq(l.v[3].mtime_ns, 0); /* no LastModified */
	h5_s3_listing_free(&l);
	ck_assert_ptr_null(l.v);
}
END_TEST

/* The bucket's root: prefix "" */
START_TEST(test_root_prefix)
{
	static const char doc[] = HEAD "<Prefix></Prefix><IsTruncated>false</IsTruncated>"
		"<Contents><Key>top.nc</Key><Size>5</Size><LastModified>2026-02-28T23:59:59.5Z</LastModified>"
		"</Contents><CommonPrefixes><Prefix>d/</Prefix></CommonPrefixes></ListBucketResult>";
	h5_s3_listing l = { 0 };

	ck_assert_int_eq(h5_s3_list_decode(&l, "", doc, strlen(doc)), 0);
	ck_assert_uint_eq(l.n, 2);
	ck_assert_str_eq(l.v[0].name, "top.nc");
	ck_assert_int_eq(l.v[0].mtime_ns, 1772323199LL * 1000000000LL + 500000000LL);
	ck_assert_str_eq(l.v[1].name, "d");
	h5_s3_listing_free(&l);
}
END_TEST

/* Every prefix of a good page is refused (a cut reply), none crashes or
 * reads past len: the bytes are copied to a buffer of exactly that size. */
START_TEST(test_truncated)
{
	size_t n = strlen(page1);

	for (size_t cut = 0; cut < n; cut++) {
		h5_s3_listing l = { 0 };
		char *b = malloc(cut ? cut : 1);

		memcpy(b, page1, cut);
		h5_err_clear();
		int rc = h5_s3_list_decode(&l, "run/", b, cut);

		ck_assert_msg(rc < 0, "a page cut at %zu bytes was accepted", cut);
		ck_assert_msg(strlen(h5_err_msg()) > 0, "no message at cut %zu", cut);
		free(b);
		h5_s3_listing_free(&l);
	}
}
END_TEST

static void refused(const char *doc, int code, const char *needle)
{
	h5_s3_listing l = { 0 };

	h5_err_clear();
	ck_assert_int_eq(h5_s3_list_decode(&l, "run/", doc, strlen(doc)), code);
	ck_assert_msg(strstr(h5_err_msg(), needle), "message \"%s\" lacks \"%s\"", h5_err_msg(), needle);
	h5_s3_listing_free(&l);
}

START_TEST(test_refused)
{
	refused("", H5_ERR_FORMAT, "truncated");
	refused("<html><body>502 Bad Gateway</body></html>", H5_ERR_FORMAT, "not a ListBucketResult");
	refused("not xml at all", H5_ERR_FORMAT, "outside the document");
	{
		/* a NUL byte is no white space (strchr would find the terminator) */
		h5_s3_listing l = { 0 };
		static const char nul[] = "\0<ListBucketResult/>";

		ck_assert_int_eq(h5_s3_list_decode(&l, "", nul, sizeof(nul) - 1), H5_ERR_FORMAT);
		ck_assert_int_eq(h5_s3_list_decode(&l, "", nul + 1, sizeof(nul) - 2), 0);
		h5_s3_listing_free(&l);
	}
	refused(HEAD "<Contents><Key>run/a</Key><Size>1</Size></Key></ListBucketResult>", H5_ERR_FORMAT,
		"closes no open element");
	refused(HEAD "</ListBucketResult><Extra/>", H5_ERR_FORMAT, "after the document element");
	refused(HEAD "<Contents><Key>run/a&bogus;</Key><Size>1</Size></Contents></ListBucketResult>",
		H5_ERR_FORMAT, "unknown entity");
	refused(HEAD "<Contents><Key>run/a&#0;</Key><Size>1</Size></Contents></ListBucketResult>",
		H5_ERR_FORMAT, "names no character");
	refused(HEAD "<Contents><Key>run/a&#xD800;</Key><Size>1</Size></Contents></ListBucketResult>",
		H5_ERR_FORMAT, "names no character");
	refused(HEAD "<Contents><Key>run/a&#99999999999;</Key><Size>1</Size></Contents></ListBucketResult>",
		H5_ERR_FORMAT, "character reference");
	refused(HEAD "<Contents><Key>run/a</Key><Size>-1</Size></Contents></ListBucketResult>", H5_ERR_FORMAT,
		"Size");
	refused(HEAD "<Contents><Key>run/a</Key><Size>18446744073709551616</Size></Contents></ListBucketResult>",
		H5_ERR_FORMAT, "64-bit");
	refused(HEAD "<Contents><Key>run/a</Key></Contents></ListBucketResult>", H5_ERR_FORMAT, "without Size");
	refused(HEAD "<Contents><Size>1</Size></Contents></ListBucketResult>", H5_ERR_FORMAT, "without Key");
	refused(HEAD "<Contents><Key>other/a</Key><Size>1</Size></Contents></ListBucketResult>", H5_ERR_FORMAT,
		"outside the prefix");
	refused(HEAD "<Contents><Key>run/a/b</Key><Size>1</Size></Contents></ListBucketResult>", H5_ERR_FORMAT,
		"delimiter");
	refused(HEAD "<CommonPrefixes><Prefix>run/a</Prefix></CommonPrefixes></ListBucketResult>",
		H5_ERR_FORMAT, "NAME/");
	refused(HEAD "<CommonPrefixes><Prefix>run/a/b/</Prefix></CommonPrefixes></ListBucketResult>",
		H5_ERR_FORMAT, "two levels");
	refused(HEAD "<Contents><Key>run/a</Key><Size>1</Size><LastModified>yesterday</LastModified>"
		"</Contents></ListBucketResult>", H5_ERR_FORMAT, "LastModified");
	refused(HEAD "<IsTruncated>true</IsTruncated></ListBucketResult>", H5_ERR_FORMAT,
		"NextContinuationToken");
	refused(HEAD "<IsTruncated>maybe</IsTruncated></ListBucketResult>", H5_ERR_FORMAT, "IsTruncated");
	refused("<!DOCTYPE x [<!ENTITY a \"b\">]><ListBucketResult/>", H5_ERR_FORMAT, "DOCTYPE");
	refused(HEAD "<a><b><c><d><e><f><g><h><i></i></h></g></f></e></d></c></b></a></ListBucketResult>",
		H5_ERR_LIMIT, "nested");
	refused("<?xml version=\"1.0\"?><Error><Code>NoSuchBucket</Code><Message>The specified bucket does "
		"not exist</Message></Error>", H5_ERR_NOTFOUND, "NoSuchBucket: The specified bucket");
	refused("<Error><Code>AccessDenied</Code><Message>Access &amp; denied</Message></Error>", H5_ERR_IO,
		"AccessDenied: Access & denied");
}
END_TEST

/* A value longer than any S3 key is refused, not copied. */
START_TEST(test_limits)
{
	size_t n = 100000;
	char *doc = malloc(n + 200), *p = doc;

	p += sprintf(p, "%s<Contents><Key>run/", HEAD);
	memset(p, 'k', n);
	p += n;
	sprintf(p, "</Key><Size>1</Size></Contents></ListBucketResult>");
	refused(doc, H5_ERR_LIMIT, "bytes");
	free(doc);
}
END_TEST

START_TEST(test_bad_url)
{
	h5_s3_listing l;

	ck_assert_int_lt(h5_s3_list(&l, "s3://bucket/no-slash", NULL), 0);
	ck_assert_int_lt(h5_s3_list(&l, "s3:///x/", NULL), 0);
	ck_assert_int_lt(h5_s3_list(&l, "http://host/x/", NULL), 0);
	ck_assert_uint_eq(l.n, 0);
}
END_TEST

START_TEST(test_suffixes)
{
	ck_assert_int_eq(h5_name_has_suffix("run.h5", NULL), 1);
	ck_assert_int_eq(h5_name_has_suffix("RUN.NC4", ""), 1);
	ck_assert_int_eq(h5_name_has_suffix("x.h5ad", NULL), 1);
	ck_assert_int_eq(h5_name_has_suffix("x.h5.txt", NULL), 0);
	ck_assert_int_eq(h5_name_has_suffix(".h5", NULL), 0);     /* the suffix alone: no name */
	ck_assert_int_eq(h5_name_has_suffix("scan.nxs", ".h5:.nxs"), 1);
	ck_assert_int_eq(h5_name_has_suffix("scan.nc", ".h5:.nxs"), 0);
	ck_assert_int_eq(h5_name_has_suffix("scan.nxs", "::.nxs:"), 1);
	ck_assert_int_eq(h5_name_has_suffix("scan", "::"), 0);
}
END_TEST

static Suite *s3_list_suite(void)
{
	Suite *s = suite_create("s3_list");
	TCase *tc = tcase_create("decode");

	tcase_add_test(tc, test_pages);
	tcase_add_test(tc, test_root_prefix);
	tcase_add_test(tc, test_truncated);
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_bad_url);
	tcase_add_test(tc, test_suffixes);
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(s3_list_suite)
