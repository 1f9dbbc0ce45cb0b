/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_atomic.c - the ptl3 provider's software atomics (ptl3_atomic.c) through
 * the public libfabric API, in one process that targets its own registered
 * region: worked examples of every operation class with their expected
 * values (integer wrap, logical and bitwise ops, the compare-swap family,
 * mswap, floating point and complex, arrays, an unaligned offset, read and
 * write, fetching and compare variants returning the old values, injects),
 * the errors a bad key, range or access right gets (an error completion, not
 * a hang), and fi_query_atomic / fi_*atomicvalid agreeing on what is offered.
 * Run with FI_PROVIDER_PATH=<dir of libptl3-fi.so>. */
#include <complex.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fi_test_util.h"

static struct fid_ep *ep;
static struct fid_cq *cq;
static fi_addr_t self;
static struct fi_context ctx;

enum { KEY = 42, KEY_RO = 43, REGION = 4096 };
static char region[REGION], region_ro[64];

/* the completion of the one operation in flight: 0 or its error */
static int wait_done(void)
{
	struct fi_cq_tagged_entry e;
	int err = fi_test_wait(cq, &ctx, &e, NULL);
	if (!err)
		CHECK(e.flags & FI_ATOMIC, "completion flags %#llx", (unsigned long long)e.flags);
	return err;
}

static int base(const void *buf, size_t n, uint64_t off, uint64_t key, enum fi_datatype dt,
                enum fi_op op)
{
	TRY(fi_atomic(ep, buf, n, NULL, self, off, key, dt, op, &ctx));
	return wait_done();
}

static int fetch(const void *buf, void *res, size_t n, uint64_t off, enum fi_datatype dt,
                 enum fi_op op)
{
	TRY(fi_fetch_atomic(ep, buf, n, NULL, res, NULL, self, off, KEY, dt, op, &ctx));
	return wait_done();
}

static int compare(const void *buf, const void *cmp, void *res, size_t n, uint64_t off,
                   enum fi_datatype dt, enum fi_op op)
{
	TRY(fi_compare_atomic(ep, buf, n, NULL, cmp, NULL, res, NULL, self, off, KEY, dt, op,
	                      &ctx));
	return wait_done();
}

static void integers(void)
{
	int32_t i32 = 5, v32 = 3, old32 = 0;
	memcpy(region, &i32, 4);
	CHECK(base(&v32, 1, 0, KEY, FI_INT32, FI_SUM) == 0, "int32 sum");
	memcpy(&i32, region, 4);
	CHECK(i32 == 8, "int32 5 + 3 = %d", i32);
	v32 = -10;
	CHECK(fetch(&v32, &old32, 1, 0, FI_INT32, FI_SUM) == 0 && old32 == 8, "fetch sum old %d",
	      old32);
	memcpy(&i32, region, 4);
	CHECK(i32 == -2, "int32 8 - 10 = %d", i32);

	uint8_t u8 = 200, two = 2;
	memcpy(region + 100, &u8, 1);
	CHECK(base(&two, 1, 100, KEY, FI_UINT8, FI_PROD) == 0 && (uint8_t)region[100] == 144,
	      "uint8 200 * 2 wraps to 144: %u", (uint8_t)region[100]);

	uint16_t big = 65535; /* 65535 * 65535 = 1 mod 2^16 (no int overflow inside) */
	memcpy(region + 102, &big, 2);
	CHECK(base(&big, 1, 102, KEY, FI_UINT16, FI_PROD) == 0, "uint16 prod");
	memcpy(&big, region + 102, 2);
	CHECK(big == 1, "uint16 65535 * 65535 wraps to 1: %u", big);

	int64_t a[4] = {7, -3, 9, 0}, b[4] = {2, -8, 20, 0};
	memcpy(region + 8, a, sizeof(a));
	CHECK(base(b, 4, 8, KEY, FI_INT64, FI_MIN) == 0, "int64 min");
	memcpy(a, region + 8, sizeof(a));
	CHECK(a[0] == 2 && a[1] == -8 && a[2] == 9 && a[3] == 0, "min %lld %lld %lld %lld",
	      (long long)a[0], (long long)a[1], (long long)a[2], (long long)a[3]);
	CHECK(base(b, 4, 8, KEY, FI_INT64, FI_MAX) == 0, "int64 max");
	memcpy(a, region + 8, sizeof(a));
	CHECK(a[0] == 2 && a[1] == -8 && a[2] == 20 && a[3] == 0, "max");

	uint16_t w = 0x0F0F, m = 0x00FF;
	struct {
		enum fi_op op;
		uint16_t want;
	} bits[] = {{FI_BOR, 0x0FFF}, {FI_BAND, 0x000F}, {FI_BXOR, 0x0FF0}};
	for (size_t i = 0; i < 3; i++) {
		memcpy(region + 200, &w, 2);
		CHECK(base(&m, 1, 200, KEY, FI_UINT16, bits[i].op) == 0, "bitwise %zu", i);
		uint16_t got;
		memcpy(&got, region + 200, 2);
		CHECK(got == bits[i].want, "bitwise op %zu: %#x, expected %#x", i, got,
		      bits[i].want);
	}
	uint32_t l = 0, one = 1, got;
	struct {
		enum fi_op op;
		uint32_t start, v, want;
	} logic[] = {{FI_LOR, 0, 5, 1},
	             {FI_LAND, 3, 0, 0},
	             {FI_LAND, 3, 9, 1},
	             {FI_LXOR, 4, 1, 0},
	             {FI_LXOR, 0, 1, 1}};
	for (size_t i = 0; i < 5; i++) {
		l = logic[i].start;
		one = logic[i].v;
		memcpy(region + 300, &l, 4);
		CHECK(base(&one, 1, 300, KEY, FI_UINT32, logic[i].op) == 0, "logical %zu", i);
		memcpy(&got, region + 300, 4);
		CHECK(got == logic[i].want, "logical %zu: %u, expected %u", i, got, logic[i].want);
	}
	/* an offset not aligned for the type */
	int32_t x = 1000, y = 1;
	memcpy(region + 401, &x, 4);
	CHECK(base(&y, 1, 401, KEY, FI_INT32, FI_SUM) == 0, "unaligned");
	memcpy(&x, region + 401, 4);
	CHECK(x == 1001, "unaligned int32 sum %d", x);
}

static void swaps(void)
{
	int32_t t = 10, v = 99, c, old = 0;
	struct {
		enum fi_op op;
		int32_t cmp;
		int swapped;
	} cases[] = {
	    {FI_CSWAP, 10, 1},    {FI_CSWAP, 11, 0},    {FI_CSWAP_NE, 11, 1}, {FI_CSWAP_NE, 10, 0},
	    {FI_CSWAP_LE, 10, 1}, {FI_CSWAP_LE, 11, 0}, {FI_CSWAP_LT, 9, 1},  {FI_CSWAP_LT, 10, 0},
	    {FI_CSWAP_GE, 10, 1}, {FI_CSWAP_GE, 9, 0},  {FI_CSWAP_GT, 11, 1}, {FI_CSWAP_GT, 10, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memcpy(region + 500, &t, 4);
		c = cases[i].cmp;
		CHECK(compare(&v, &c, &old, 1, 500, FI_INT32, cases[i].op) == 0, "cswap %zu", i);
		int32_t now;
		memcpy(&now, region + 500, 4);
		CHECK(old == 10 && now == (cases[i].swapped ? 99 : 10),
		      "case %zu (compare %d with target 10): old %d, now %d", i, c, old, now);
	}
	uint16_t tgt = 0xAAAA, src = 0x5555, mask = 0x00FF, o16 = 0;
	memcpy(region + 520, &tgt, 2);
	CHECK(compare(&src, &mask, &o16, 1, 520, FI_UINT16, FI_MSWAP) == 0, "mswap");
	memcpy(&tgt, region + 520, 2);
	CHECK(o16 == 0xAAAA && tgt == 0xAA55, "mswap: old %#x now %#x", o16, tgt);
}

static void floats_and_more(void)
{
	double d = 1.5, e = 2.25, od = 0;
	memcpy(region + 600, &d, 8);
	CHECK(fetch(&e, &od, 1, 600, FI_DOUBLE, FI_SUM) == 0 && od == 1.5, "double fetch sum");
	memcpy(&d, region + 600, 8);
	CHECK(d == 3.75, "double 1.5 + 2.25 = %g", d);
	float f = 2.0f, g = 3.0f;
	memcpy(region + 616, &f, 4);
	CHECK(base(&g, 1, 616, KEY, FI_FLOAT, FI_MAX) == 0, "float max");
	memcpy(&f, region + 616, 4);
	CHECK(f == 3.0f, "float max %g", (double)f);
	double complex z = 1.0 + 2.0 * I, w = 3.0 - 1.0 * I;
	memcpy(region + 640, &z, sizeof(z));
	CHECK(base(&w, 1, 640, KEY, FI_DOUBLE_COMPLEX, FI_PROD) == 0, "complex prod");
	memcpy(&z, region + 640, sizeof(z));
	CHECK(creal(z) == 5.0 && cimag(z) == 5.0, "(1+2i)(3-i) = %g%+gi", creal(z), cimag(z));
	/* read and write */
	uint64_t q = 0x1122334455667788ULL, r = 0;
	CHECK(base(&q, 1, 700, KEY, FI_UINT64, FI_ATOMIC_WRITE) == 0, "atomic write");
	CHECK(fetch(NULL, &r, 1, 700, FI_UINT64, FI_ATOMIC_READ) == 0 && r == q,
	      "atomic read %#llx", (unsigned long long)r);
	/* an array of 100 */
	int32_t arr[100], inc[100];
	for (int i = 0; i < 100; i++) {
		arr[i] = i;
		inc[i] = 1000 * i;
	}
	memcpy(region + 1024, arr, sizeof(arr));
	CHECK(fetch(inc, arr, 100, 1024, FI_INT32, FI_SUM) == 0, "array fetch sum");
	int ok = 1;
	for (int i = 0; i < 100; i++) {
		int32_t now;
		memcpy(&now, region + 1024 + 4 * i, 4);
		ok &= arr[i] == i && now == 1001 * i;
	}
	CHECK(ok, "array of 100: old values and sums");
	/* inject: no completion, the buffer is free at return */
	int64_t n = 40, add = 2;
	memcpy(region + 900, &n, 8);
	TRY(fi_inject_atomic(ep, &add, 1, self, 900, KEY, FI_INT64, FI_SUM));
	add = 1000;
	for (int i = 0; i < 100000; i++) {
		memcpy(&n, region + 900, 8);
		if (n != 40)
			break;
		struct fi_cq_tagged_entry ce;
		CHECK(fi_cq_read(cq, &ce, 1) != 1, "an inject wrote a completion");
	}
	CHECK(n == 42, "inject: 40 + 2 = %lld", (long long)n);
}

/* the iovec and message forms (ptl3_atomic.c hands all of them to one
 * path): the operands from fi_ioc / fi_msg_atomic, the results as above */
static void vectors_and_msgs(void)
{
	int32_t v = 40, start = 2, old = 0, cmp = 42, swap = 7, got;
	memcpy(region + 400, &start, 4);
	struct fi_ioc iov = {.addr = &v, .count = 1};
	TRY(fi_atomicv(ep, &iov, NULL, 1, self, 400, KEY, FI_INT32, FI_SUM, &ctx));
	CHECK(wait_done() == 0, "atomicv");
	memcpy(&got, region + 400, 4);
	CHECK(got == 42, "atomicv: 2 + 40 = %d", got);

	struct fi_rma_ioc rma = {.addr = 400, .count = 1, .key = KEY};
	struct fi_msg_atomic msg = {.msg_iov = &iov,
	                            .iov_count = 1,
	                            .addr = self,
	                            .rma_iov = &rma,
	                            .rma_iov_count = 1,
	                            .datatype = FI_INT32,
	                            .op = FI_SUM,
	                            .context = &ctx};
	v = 8;
	TRY(fi_atomicmsg(ep, &msg, 0));
	CHECK(wait_done() == 0, "atomicmsg");
	memcpy(&got, region + 400, 4);
	CHECK(got == 50, "atomicmsg: 42 + 8 = %d", got);

	struct fi_ioc res = {.addr = &old, .count = 1};
	v = 0;
	msg.op = FI_ATOMIC_READ;
	msg.iov_count = 0;
	TRY(fi_fetch_atomicmsg(ep, &msg, &res, NULL, 1, 0));
	CHECK(wait_done() == 0 && old == 50, "fetch_atomicmsg read: %d", old);

	struct fi_ioc cmpv = {.addr = &cmp, .count = 1};
	iov.addr = &swap;
	msg.iov_count = 1;
	msg.op = FI_CSWAP;
	cmp = 50;
	old = 0;
	TRY(fi_compare_atomicmsg(ep, &msg, &cmpv, NULL, 1, &res, NULL, 1, 0));
	CHECK(wait_done() == 0 && old == 50, "compare_atomicmsg old %d", old);
	memcpy(&got, region + 400, 4);
	CHECK(got == 7, "compare_atomicmsg: swapped in 7, got %d", got);
}

static void errors(void)
{
	int32_t v = 1;
	CHECK(base(&v, 1, 0, 777, FI_INT32, FI_SUM) == FI_EACCES, "unknown key: FI_EACCES");
	CHECK(base(&v, 1, REGION - 2, KEY, FI_INT32, FI_SUM) == FI_EINVAL,
	      "beyond the region: FI_EINVAL");
	CHECK(base(&v, 1, 0, KEY_RO, FI_INT32, FI_SUM) == FI_EACCES,
	      "region without FI_REMOTE_WRITE: FI_EACCES");
	int32_t old = -1;
	CHECK(fetch(NULL, &old, 1, 0, FI_INT32, FI_ATOMIC_READ) == 0, "read of the rw region");
	CHECK(fi_atomic(ep, &v, 1, NULL, self, 0, KEY, FI_FLOAT, FI_BOR, &ctx) == -FI_EINVAL,
	      "float bor is refused at the call");
	CHECK(fi_atomic(ep, &v, 0, NULL, self, 0, KEY, FI_INT32, FI_SUM, &ctx) == -FI_EINVAL,
	      "count 0 is refused");
}

static void queries(struct fid_domain *domain)
{
	struct fi_atomic_attr attr;
	size_t count = 0;
	CHECK(fi_query_atomic(domain, FI_INT32, FI_SUM, &attr, 0) == 0 && attr.size == 4 &&
	          attr.count == 1024,
	      "query int32 sum: size %zu count %zu", attr.size, attr.count);
	CHECK(fi_query_atomic(domain, FI_FLOAT, FI_BOR, &attr, 0) == -FI_EOPNOTSUPP, "float bor");
	CHECK(fi_query_atomic(domain, FI_INT128, FI_SUM, &attr, 0) == -FI_EOPNOTSUPP, "int128");
	CHECK(fi_query_atomic(domain, FI_LONG_DOUBLE, FI_SUM, &attr, 0) == -FI_EOPNOTSUPP,
	      "long double");
	CHECK(fi_query_atomic(domain, FI_INT32, FI_CSWAP, &attr, 0) == -FI_EOPNOTSUPP,
	      "cswap is not a base op");
	CHECK(fi_query_atomic(domain, FI_INT32, FI_CSWAP, &attr, FI_COMPARE_ATOMIC) == 0,
	      "cswap compare");
	CHECK(fi_query_atomic(domain, FI_INT32, FI_ATOMIC_READ, &attr, 0) == -FI_EOPNOTSUPP,
	      "read is not a base op");
	CHECK(fi_query_atomic(domain, FI_INT32, FI_ATOMIC_READ, &attr, FI_FETCH_ATOMIC) == 0,
	      "read fetch");
	CHECK(fi_query_atomic(domain, FI_DOUBLE_COMPLEX, FI_MIN, &attr, 0) == -FI_EOPNOTSUPP,
	      "complex min");
	CHECK(fi_atomicvalid(ep, FI_UINT8, FI_BXOR, &count) == 0 && count == 4096, "valid uint8");
	CHECK(fi_fetch_atomicvalid(ep, FI_DOUBLE, FI_SUM, &count) == 0 && count == 512,
	      "fetch valid double");
	CHECK(fi_compare_atomicvalid(ep, FI_FLOAT, FI_MSWAP, &count) == -FI_EOPNOTSUPP,
	      "float mswap");
}

int main(void)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	hints->caps = FI_MSG | FI_ATOMIC;
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->mr_mode = 0;
	hints->fabric_attr->prov_name = strdup("ptl3");
	TRY(fi_getinfo(FI_VERSION(1, 11), NULL, NULL, 0, hints, &info));
	CHECK((info->caps & FI_ATOMIC) && (info->tx_attr->caps & FI_ATOMIC), "FI_ATOMIC granted");
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	TRY(fi_fabric(info->fabric_attr, &fabric, NULL));
	TRY(fi_domain(fabric, info, &domain, NULL));
	struct fi_av_attr ava = {.type = FI_AV_TABLE};
	TRY(fi_av_open(domain, &ava, &av, NULL));
	struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_TAGGED};
	TRY(fi_cq_open(domain, &cqa, &cq, NULL));
	TRY(fi_endpoint(domain, info, &ep, NULL));
	TRY(fi_ep_bind(ep, &av->fid, 0));
	TRY(fi_ep_bind(ep, &cq->fid, FI_SEND | FI_RECV));
	TRY(fi_enable(ep));
	struct fid_mr *mr, *mr_ro;
	TRY(fi_mr_reg(domain, region, REGION, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, KEY, 0, &mr,
	              NULL));
	TRY(fi_mr_reg(domain, region_ro, sizeof(region_ro), FI_REMOTE_READ, 0, KEY_RO, 0, &mr_ro,
	              NULL));
	char name[64];
	size_t len = sizeof(name);
	TRY(fi_getname(&ep->fid, name, &len));
	CHECK(fi_av_insert(av, name, 1, &self, 0, NULL) == 1, "av_insert");
	queries(domain);
	integers();
	swaps();
	floats_and_more();
	vectors_and_msgs();
	errors();
	CHECK(fi_close(&mr->fid) == 0 && fi_close(&mr_ro->fid) == 0, "close regions");
	CHECK(fi_close(&ep->fid) == 0, "close endpoint");
	CHECK(fi_close(&cq->fid) == 0 && fi_close(&av->fid) == 0, "close CQ, AV");
	CHECK(fi_close(&domain->fid) == 0 && fi_close(&fabric->fid) == 0, "close domain, fabric");
	fi_freeinfo(info);
	fi_freeinfo(hints);
	return fi_test_report("");
}
