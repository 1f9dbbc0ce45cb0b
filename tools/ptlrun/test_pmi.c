/* SPDX-License-Identifier: BSD-3-Clause */
/* test_pmi.c - the PMI-1 client (pmi.c) and the PMI exchange of runtime.c
 * against a fake process manager on socketpairs (and on TCP for PMI_PORT):
 * the protocol, the key exchange, and every failure mode a client must
 * report clearly (error rc, silence, overlong lines, closed connection,
 * wrong reply, wrong version). */
#include "config.h"

#include "rt.h"
#include "rt_stubs.h"
#include "runtime.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <p3rt/p3rt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the fake process manager ------------------------------------------ */

enum fake_mode {
	FAKE_OK,
	FAKE_PUT_FAIL,
	FAKE_PUT_SILENT,
	FAKE_PUT_LONG,
	FAKE_PUT_CLOSE,
	FAKE_PUT_BADCMD,
	FAKE_V2,
	FAKE_BYTEWISE
};

#define FAKE_MAX_KEYS 64

struct fake {
	int fk_size; /* clients taking part in barriers */
	enum fake_mode fk_mode;
	int fk_port_mode; /* expect "cmd=initack" first */
	pthread_mutex_t fk_lock;
	pthread_cond_t fk_cond;
	int fk_in_barrier, fk_barrier_gen;
	int fk_nkeys;
	char fk_keys[FAKE_MAX_KEYS][64], fk_vals[FAKE_MAX_KEYS][128];
	int fk_requests; /* lines received, all clients */
	int fk_finalized;
};

struct fake_client {
	struct fake *fc_fake;
	int fc_fd;
	int fc_rank;
};

static void fake_init(struct fake *f, int size, enum fake_mode mode)
{
	memset(f, 0, sizeof(*f));
	f->fk_size = size;
	f->fk_mode = mode;
	pthread_mutex_init(&f->fk_lock, NULL);
	pthread_cond_init(&f->fk_cond, NULL);
}

static void fake_reply(struct fake_client *c, const char *s)
{
	size_t len = strlen(s);

	if (c->fc_fake->fk_mode == FAKE_BYTEWISE) {
		for (size_t i = 0; i < len; i++) {
			struct timespec ts = {0, 200000};

			if (write(c->fc_fd, s + i, 1) != 1)
				return;
			nanosleep(&ts, NULL);
		}
		return;
	}
	if (write(c->fc_fd, s, len) != (ssize_t)len)
		return;
}

/* Value of key in a request line, or "" */
static void fake_field(const char *line, const char *key, char *val, size_t len)
{
	char pat[32];
	const char *p;
	size_t n;

	snprintf(pat, sizeof(pat), " %s=", key);
	val[0] = '\0';
	p = strstr(line, pat);
	if (!p)
		return;
	p += strlen(pat);
	n = strcspn(p, " \n");
	if (n >= len)
		n = len - 1;
	memcpy(val, p, n);
	val[n] = '\0';
}

static void *fake_serve(void *arg)
{
	struct fake_client *c = arg;
	struct fake *f = c->fc_fake;
	FILE *in = fdopen(dup(c->fc_fd), "r");
	char *line = NULL, reply[8192], key[64], val[128];
	size_t cap = 0;

	while (in && getline(&line, &cap, in) > 0) {
		pthread_mutex_lock(&f->fk_lock);
		f->fk_requests++;
		pthread_mutex_unlock(&f->fk_lock);
		if (strncmp(line, "cmd=initack ", 12) == 0) {
			snprintf(reply, sizeof(reply),
			         "cmd=initack\ncmd=set size=%d\n"
			         "cmd=set rank=%d\ncmd=set debug=0\n",
			         f->fk_size, c->fc_rank);
			fake_reply(c, reply);
		} else if (strncmp(line, "cmd=init ", 9) == 0) {
			fake_reply(
			    c, f->fk_mode == FAKE_V2
			           ? "cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n"
			           : "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n");
		} else if (strcmp(line, "cmd=get_maxes\n") == 0) {
			fake_reply(c, "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n");
		} else if (strcmp(line, "cmd=get_my_kvsname\n") == 0) {
			fake_reply(c, "cmd=my_kvsname kvsname=kvs_4242_0\n");
		} else if (strncmp(line, "cmd=put ", 8) == 0) {
			if (f->fk_mode == FAKE_PUT_FAIL) {
				fake_reply(c, "cmd=put_result rc=-1 msg=duplicate_key\n");
			} else if (f->fk_mode == FAKE_PUT_SILENT) {
				continue;
			} else if (f->fk_mode == FAKE_PUT_LONG) {
				memset(reply, 'a', sizeof(reply) - 1);
				reply[sizeof(reply) - 1] = '\0';
				fake_reply(c, reply);
			} else if (f->fk_mode == FAKE_PUT_CLOSE) {
				break;
			} else if (f->fk_mode == FAKE_PUT_BADCMD) {
				fake_reply(c, "cmd=barrier_out\n");
			} else {
				fake_field(line, "key", key, sizeof(key));
				fake_field(line, "value", val, sizeof(val));
				pthread_mutex_lock(&f->fk_lock);
				strcpy(f->fk_keys[f->fk_nkeys], key);
				strcpy(f->fk_vals[f->fk_nkeys++], val);
				pthread_mutex_unlock(&f->fk_lock);
				fake_reply(c, "cmd=put_result rc=0 msg=success\n");
			}
		} else if (strcmp(line, "cmd=barrier_in\n") == 0) {
			int gen;

			pthread_mutex_lock(&f->fk_lock);
			gen = f->fk_barrier_gen;
			if (++f->fk_in_barrier == f->fk_size) {
				f->fk_in_barrier = 0;
				f->fk_barrier_gen++;
				pthread_cond_broadcast(&f->fk_cond);
			}
			while (gen == f->fk_barrier_gen)
				pthread_cond_wait(&f->fk_cond, &f->fk_lock);
			pthread_mutex_unlock(&f->fk_lock);
			fake_reply(c, "cmd=barrier_out\n");
		} else if (strncmp(line, "cmd=get ", 8) == 0) {
			int i;

			fake_field(line, "key", key, sizeof(key));
			pthread_mutex_lock(&f->fk_lock);
			for (i = 0; i < f->fk_nkeys && strcmp(f->fk_keys[i], key) != 0; i++)
				;
			if (i < f->fk_nkeys)
				snprintf(reply, sizeof(reply),
				         "cmd=get_result rc=0 msg=success value=%s\n",
				         f->fk_vals[i]);
			else
				snprintf(reply, sizeof(reply),
				         "cmd=get_result rc=-1 msg=key_%s_not_found\n", key);
			pthread_mutex_unlock(&f->fk_lock);
			fake_reply(c, reply);
		} else if (strcmp(line, "cmd=finalize\n") == 0) {
			pthread_mutex_lock(&f->fk_lock);
			f->fk_finalized++;
			pthread_mutex_unlock(&f->fk_lock);
			fake_reply(c, "cmd=finalize_ack\n");
		} else {
			fake_reply(c, "cmd=unknown rc=-1\n");
		}
	}
	free(line);
	if (in)
		fclose(in);
	close(c->fc_fd);
	return NULL;
}

/* Start a server thread on a new socketpair; returns the client's end. */
static int fake_start(struct fake *f, struct fake_client *c, int rank, pthread_t *th)
{
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	c->fc_fake = f;
	c->fc_fd = sv[1];
	c->fc_rank = rank;
	ck_assert_int_eq(pthread_create(th, NULL, fake_serve, c), 0);
	return sv[0];
}

static void clear_env(void)
{
	static const char *const vars[] = {
	    "PTL_MY_RID", "PTL_NIDMAP",     "PTL_PIDMAP",
	    "PTL_MY_JID", "PMI_FD",         "PMI_RANK",
	    "PMI_SIZE",   "PMI_PORT",       "PMI_ID",
	    "PMI_JOBID",  "SLURM_MPI_TYPE", "PMIX_NAMESPACE",
	    "PMIX_RANK",  "P3_PMI",         "P3_RUNTIME_PMI_TIMEOUT"};

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	p3_runtime_reset();
}

static void set_pmi_env(int fd, int rank, int size)
{
	char buf[16];

	clear_env();
	snprintf(buf, sizeof(buf), "%d", fd);
	setenv("PMI_FD", buf, 1);
	snprintf(buf, sizeof(buf), "%d", rank);
	setenv("PMI_RANK", buf, 1);
	snprintf(buf, sizeof(buf), "%d", size);
	setenv("PMI_SIZE", buf, 1);
}

#define ck_assert_str_has(s, sub)                                                                  \
	ck_assert_msg(strstr((s), (sub)) != NULL, "'%s' lacks '%s'", (s), (sub))

/* ---- the client API ---------------------------------------------------- */

struct peer {
	int pe_fd, pe_rank, pe_size;
	const char *pe_value; /* what "p3id-<rank>" is set to */
	char pe_got[64];      /* "p3id-0" as this peer read it */
	int pe_rc;
};

/* A second rank speaking PMI directly (the exchange protocol by hand). */
static void *peer_main(void *arg)
{
	struct peer *p = arg;
	struct p3_pmi pmi;
	char err[P3_RT_ERRLEN], key[32];

	p->pe_rc = -1;
	if (p3_pmi_open_fd(&pmi, p->pe_fd, p->pe_rank, p->pe_size, 5000, err, sizeof(err)) != 0)
		return NULL;
	snprintf(key, sizeof(key), "p3id-%d", p->pe_rank);
	if (p3_pmi_put(&pmi, key, p->pe_value, err, sizeof(err)) != 0 ||
	    p3_pmi_barrier(&pmi, err, sizeof(err)) != 0 ||
	    p3_pmi_get(&pmi, "p3id-0", p->pe_got, sizeof(p->pe_got), err, sizeof(err)) != 0) {
		fprintf(stderr, "peer: %s\n", err);
		return NULL;
	}
	p3_pmi_close(&pmi);
	p->pe_rc = 0;
	return NULL;
}

START_TEST(client_two_ranks)
{
	struct fake f;
	struct fake_client c0, c1;
	pthread_t s0, s1, pt;
	struct peer peer = {.pe_rank = 1, .pe_size = 2, .pe_value = "one"};
	struct p3_pmi pmi;
	char err[P3_RT_ERRLEN], val[64];
	int fd;

	fake_init(&f, 2, _i ? FAKE_BYTEWISE : FAKE_OK);
	fd = fake_start(&f, &c0, 0, &s0);
	peer.pe_fd = fake_start(&f, &c1, 1, &s1);
	ck_assert_int_eq(pthread_create(&pt, NULL, peer_main, &peer), 0);
	ck_assert_msg(p3_pmi_open_fd(&pmi, fd, 0, 2, 5000, err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(pmi.pm_kvsname, "kvs_4242_0");
	ck_assert_int_eq(pmi.pm_keylen_max, 64);
	ck_assert_msg(p3_pmi_put(&pmi, "p3id-0", "zero", err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(p3_pmi_barrier(&pmi, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(p3_pmi_get(&pmi, "p3id-1", val, sizeof(val), err, sizeof(err)) == 0, "%s",
	              err);
	ck_assert_str_eq(val, "one");
	ck_assert_int_eq(p3_pmi_get(&pmi, "nope", val, sizeof(val), err, sizeof(err)), -1);
	ck_assert_str_has(err, "rc=-1 (key_nope_not_found)");
	ck_assert_int_eq(p3_pmi_put(&pmi, "bad key", "v", err, sizeof(err)), -1);
	ck_assert_str_has(err, "'bad key'");
	ck_assert_int_eq(p3_pmi_put(&pmi, "k", "a=b", err, sizeof(err)), -1);
	p3_pmi_close(&pmi);
	pthread_join(pt, NULL);
	ck_assert_int_eq(peer.pe_rc, 0);
	ck_assert_str_eq(peer.pe_got, "zero");
	pthread_join(s0, NULL);
	pthread_join(s1, NULL);
	ck_assert_int_eq(f.fk_finalized, 2);
}
END_TEST

static const struct {
	enum fake_mode mode;
	const char *msg;
} failures[] = {
    {FAKE_PUT_FAIL, "put_result failed: rc=-1 (duplicate_key)"},
    {FAKE_PUT_SILENT, "no reply from the process manager within 300 ms"},
    {FAKE_PUT_LONG, "reply line longer than"},
    {FAKE_PUT_CLOSE, "closed the connection"},
    {FAKE_PUT_BADCMD, "expected cmd=put_result, got 'cmd=barrier_out'"},
};

START_TEST(client_failures)
{
	struct fake f;
	struct fake_client c;
	pthread_t s;
	struct p3_pmi pmi;
	char err[P3_RT_ERRLEN];
	int fd;

	fake_init(&f, 1, failures[_i].mode);
	fd = fake_start(&f, &c, 0, &s);
	/* 300 ms is the case under test for the silent manager only: the
	 * others must not time out first on a loaded machine (a CI run got
	 * "no reply within 300 ms" where the long reply was expected) */
	int timeout_ms = failures[_i].mode == FAKE_PUT_SILENT ? 300 : 20000;
	ck_assert_msg(p3_pmi_open_fd(&pmi, fd, 0, 1, timeout_ms, err, sizeof(err)) == 0, "%s",
	              err);
	ck_assert_int_eq(p3_pmi_put(&pmi, "k", "v", err, sizeof(err)), -1);
	ck_assert_str_has(err, failures[_i].msg);
	close(fd);
	pthread_join(s, NULL);
}
END_TEST

START_TEST(client_wrong_version)
{
	struct fake f;
	struct fake_client c;
	pthread_t s;
	struct p3_pmi pmi;
	char err[P3_RT_ERRLEN];
	int fd;

	fake_init(&f, 1, FAKE_V2);
	fd = fake_start(&f, &c, 0, &s);
	ck_assert_int_eq(p3_pmi_open_fd(&pmi, fd, 0, 1, 1000, err, sizeof(err)), -1);
	ck_assert_str_has(err, "PMI version 2");
	ck_assert_int_eq(p3_pmi_open_fd(&pmi, fd, 3, 2, 1000, err, sizeof(err)), -1);
	ck_assert_str_has(err, "rank 3 of 2");
	close(fd);
	pthread_join(s, NULL);
}
END_TEST

/* ---- the runtime over PMI ---------------------------------------------- */

START_TEST(runtime_exchange)
{
	struct fake f;
	struct fake_client c0, c1;
	pthread_t s0, s1, pt;
	struct peer peer = {.pe_rank = 1, .pe_size = 2, .pe_value = "3:33"};
	const struct p3_runtime *rt;
	ptl_process_id_t id;
	unsigned int r, n;
	ptl_jid_t jid;
	int fd;

	fake_init(&f, 2, FAKE_OK);
	fd = fake_start(&f, &c0, 0, &s0);
	peer.pe_fd = fake_start(&f, &c1, 1, &s1);
	set_pmi_env(fd, 0, 2);

	/* an implicit load (PtlNIInit without PtlSetRank(-1, -1), as in the
	 * MPICH adapter) must leave PMI alone */
	ck_assert_int_eq(p3_runtime_load(), 0);
	ck_assert_int_eq(p3_runtime_get()->rank, -1);
	ck_assert_int_eq(f.fk_requests, 0);

	ck_assert_int_eq(PtlSetRank(PTL_INVALID_HANDLE, -1, -1), PTL_OK);
	rt = p3_runtime_get();
	ck_assert_int_eq(rt->rank, 0);
	ck_assert_int_eq(rt->nranks, 2);
	ck_assert_int_eq(rt->needs_exchange, 1);
	ck_assert_ptr_null(rt->nidmap);
	ck_assert_uint_ne(rt->jid, PTL_JID_ANY);
	ck_assert_int_eq(PtlGetRank(STUB_NI, &r, &n), PTL_OK);
	ck_assert_uint_eq(r, 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(PtlGetRankId(STUB_NI, 1, &id), PTL_FAIL); /* not exchanged yet */
	ck_assert_int_eq(PtlGetJID(STUB_NI, &jid), PTL_OK);
	ck_assert_uint_eq(jid, rt->jid);

	ck_assert_int_eq(pthread_create(&pt, NULL, peer_main, &peer), 0);
	ck_assert_int_eq(p3_runtime_exchange((ptl_process_id_t){.nid = 5, .pid = 55}), 0);
	pthread_join(pt, NULL);
	ck_assert_int_eq(peer.pe_rc, 0);
	ck_assert_str_eq(peer.pe_got, "5:55");
	rt = p3_runtime_get();
	ck_assert_int_eq(rt->needs_exchange, 0);
	ck_assert_ptr_nonnull(rt->nidmap);
	ck_assert_uint_eq(rt->nidmap[0], 5);
	ck_assert_uint_eq(rt->pidmap[0], 55);
	ck_assert_uint_eq(rt->nidmap[1], 3);
	ck_assert_uint_eq(rt->pidmap[1], 33);
	ck_assert_int_eq(PtlGetRankId(STUB_NI, 1, &id), PTL_OK);
	ck_assert_uint_eq(id.pid, 33);
	/* a second exchange is a no-op */
	ck_assert_int_eq(p3_runtime_exchange((ptl_process_id_t){.nid = 5, .pid = 55}), 0);
	close(fd);
	pthread_join(s0, NULL);
	pthread_join(s1, NULL);
}
END_TEST

START_TEST(runtime_exchange_bad_value)
{
	struct fake f;
	struct fake_client c0, c1;
	pthread_t s0, s1, pt;
	struct peer peer = {.pe_rank = 1, .pe_size = 2, .pe_value = "garbage"};
	int fd;

	fake_init(&f, 2, FAKE_OK);
	fd = fake_start(&f, &c0, 0, &s0);
	peer.pe_fd = fake_start(&f, &c1, 1, &s1);
	set_pmi_env(fd, 0, 2);
	ck_assert_int_eq(PtlSetRank(PTL_INVALID_HANDLE, -1, -1), PTL_OK);
	ck_assert_int_eq(pthread_create(&pt, NULL, peer_main, &peer), 0);
	ck_assert_int_eq(p3_runtime_exchange((ptl_process_id_t){.nid = 5, .pid = 55}), -1);
	pthread_join(pt, NULL);
	close(fd);
	pthread_join(s0, NULL);
	pthread_join(s1, NULL);
}
END_TEST

START_TEST(runtime_env_beats_pmi)
{
	struct fake f;
	struct fake_client c;
	pthread_t s;
	int fd;

	fake_init(&f, 1, FAKE_OK);
	fd = fake_start(&f, &c, 0, &s);
	set_pmi_env(fd, 0, 1);
	setenv("PTL_MY_RID", "1", 1);
	setenv("PTL_NIDMAP", "0:0", 1);
	setenv("PTL_PIDMAP", "0:1", 1);
	ck_assert_int_eq(PtlSetRank(PTL_INVALID_HANDLE, -1, -1), PTL_OK);
	ck_assert_int_eq(p3_runtime_get()->rank, 1);
	ck_assert_int_eq(p3_runtime_get()->needs_exchange, 0);
	ck_assert_int_eq(f.fk_requests, 0);
	close(fd);
	pthread_join(s, NULL);
}
END_TEST

/* A forked child shares PMI_FD: it must neither finalize the parent's
 * session at exit nor use it. */
START_TEST(runtime_fork_child)
{
	struct fake f;
	struct fake_client c;
	pthread_t s;
	pid_t pid;
	int fd, st, res[2];
	char used;

	fake_init(&f, 1, FAKE_OK);
	fd = fake_start(&f, &c, 0, &s);
	set_pmi_env(fd, 0, 1);
	ck_assert_int_eq(PtlSetRank(PTL_INVALID_HANDLE, -1, -1), PTL_OK);
	ck_assert_int_eq(pipe(res), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		used =
		    p3_runtime_exchange((ptl_process_id_t){.nid = 1, .pid = 1}) == -1 ? 'n' : 'y';
		if (write(res[1], &used, 1) != 1)
			_exit(1);
		exit(0); /* runs the runtime's atexit handler (exit status not checked:
		            the sanitizers may flag the fake server's buffers here) */
	}
	close(res[1]);
	ck_assert_int_eq(read(res[0], &used, 1), 1);
	ck_assert_msg(used == 'n', "the child used the parent's PMI session");
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	close(res[0]);
	pthread_mutex_lock(&f.fk_lock);
	ck_assert_int_eq(f.fk_finalized, 0);
	pthread_mutex_unlock(&f.fk_lock);
	ck_assert_int_eq(p3_runtime_exchange((ptl_process_id_t){.nid = 4, .pid = 44}), 0);
	ck_assert_uint_eq(p3_runtime_get()->pidmap[0], 44);
	close(fd);
	pthread_join(s, NULL);
}
END_TEST

START_TEST(runtime_pmi_env_errors)
{
	clear_env();
	setenv("PMI_FD", "abc", 1);
	setenv("PMI_RANK", "0", 1);
	setenv("PMI_SIZE", "1", 1);
	ck_assert_int_eq(PtlSetRank(PTL_INVALID_HANDLE, -1, -1), PTL_FAIL);
	setenv("PMI_FD", "999", 1);
	ck_assert_int_eq(PtlSetRank(PTL_INVALID_HANDLE, -1, -1), PTL_FAIL);
	clear_env();
	setenv("PMI_PORT", "no-port-here", 1);
	setenv("PMI_ID", "0", 1);
	ck_assert_int_eq(PtlSetRank(PTL_INVALID_HANDLE, -1, -1), PTL_FAIL);
	setenv("PMI_PORT", "127.0.0.1:1", 1); /* nothing listens on port 1 */
	ck_assert_int_eq(PtlSetRank(PTL_INVALID_HANDLE, -1, -1), PTL_FAIL);
}
END_TEST

struct acceptor {
	int ac_lfd;
	struct fake *ac_fake;
	struct fake_client ac_client;
};

static void *accept_main(void *arg)
{
	struct acceptor *a = arg;

	a->ac_client.fc_fake = a->ac_fake;
	a->ac_client.fc_fd = accept(a->ac_lfd, NULL, NULL);
	a->ac_client.fc_rank = 0;
	if (a->ac_client.fc_fd >= 0)
		fake_serve(&a->ac_client);
	return NULL;
}

START_TEST(runtime_pmi_port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t slen = sizeof(sin);
	struct fake f;
	struct acceptor a;
	pthread_t th;
	ptl_process_id_t id;
	char port[64];

	fake_init(&f, 1, FAKE_OK);
	a.ac_fake = &f;
	a.ac_lfd = socket(AF_INET, SOCK_STREAM, 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(a.ac_lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_int_eq(listen(a.ac_lfd, 1), 0);
	ck_assert_int_eq(getsockname(a.ac_lfd, (struct sockaddr *)&sin, &slen), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, accept_main, &a), 0);
	clear_env();
	snprintf(port, sizeof(port), "127.0.0.1:%d", ntohs(sin.sin_port));
	setenv("PMI_PORT", port, 1);
	setenv("PMI_ID", "0", 1);
	ck_assert_int_eq(PtlSetRank(PTL_INVALID_HANDLE, -1, -1), PTL_OK);
	ck_assert_int_eq(p3_runtime_get()->rank, 0);
	ck_assert_int_eq(p3_runtime_get()->nranks, 1);
	ck_assert_int_eq(p3_runtime_exchange((ptl_process_id_t){.nid = 1, .pid = 2}), 0);
	ck_assert_int_eq(PtlGetRankId(STUB_NI, 0, &id), PTL_OK);
	ck_assert_uint_eq(id.nid, 1);
	ck_assert_uint_eq(id.pid, 2);
	/* PMI is finalized at exit; the forked test process exits here */
	exit(0);
}
END_TEST

/* Which PMI the environment names: the launcher's own choice. */
static const struct {
	const char *env[12]; /* name, value pairs, NULL */
	const char *want;    /* backend name, "" for none, NULL for an error */
} detect_cases[] = {
    {{NULL}, ""},
    {{"PMI_FD", "5", "PMI_RANK", "0", "PMI_SIZE", "2", NULL}, "PMI-1"},
    {{"PMI_PORT", "h:1", "PMI_ID", "0", NULL}, "PMI-1"},
    /* Slurm's pmi2 plugin: PMI_FD as hydra's, plus the step's type and PMI_JOBID */
    {{"PMI_FD", "5", "PMI_RANK", "0", "PMI_SIZE", "2", "SLURM_MPI_TYPE", "pmi2", NULL}, "PMI-1"},
#ifdef HAVE_PMI2
    {{"PMI_FD", "5", "PMI_JOBID", "7.0", "SLURM_MPI_TYPE", "pmi2", NULL}, "PMI-2"},
    {{"P3_PMI", "pmi2", NULL}, "PMI-2"},
#else
    {{"PMI_FD", "5", "PMI_JOBID", "7.0", "SLURM_MPI_TYPE", "pmi2", NULL}, NULL},
#endif
#ifdef HAVE_PMIX
    {{"PMIX_NAMESPACE", "ns", "PMIX_RANK", "0", "PMI_FD", "5", NULL}, "PMIx"},
    {{"P3_PMI", "pmix", NULL}, "PMIx"},
#else
    {{"PMIX_NAMESPACE", "ns", "PMIX_RANK", "0", NULL}, NULL},
#endif
    {{"P3_PMI", "pmi1", NULL}, "PMI-1"},
    {{"P3_PMI", "none", "PMI_FD", "5", "PMI_RANK", "0", "PMI_SIZE", "2", NULL}, ""},
    {{"P3_PMI", "pmi3", NULL}, NULL},
};

START_TEST(detect_launcher_pmi)
{
	const struct p3_pmi_ops *ops;
	char err[P3_RT_ERRLEN];

	clear_env();
	for (int k = 0; detect_cases[_i].env[k]; k += 2)
		setenv(detect_cases[_i].env[k], detect_cases[_i].env[k + 1], 1);
	ops = p3_pmi_detect(err, sizeof(err));
	if (!detect_cases[_i].want) {
		ck_assert_ptr_null(ops);
		ck_assert_msg(err[0] != '\0', "case %d: an error message", _i);
	} else if (detect_cases[_i].want[0] == '\0') {
		ck_assert_ptr_null(ops);
		ck_assert_msg(err[0] == '\0', "case %d: no PMI is not an error: %s", _i, err);
	} else {
		ck_assert_msg(ops != NULL, "case %d: %s", _i, err);
		ck_assert_str_eq(ops->name, detect_cases[_i].want);
	}
	clear_env();
}
END_TEST

static Suite *pmi_suite(void)
{
	Suite *s = suite_create("runtime-pmi");
	TCase *tc = tcase_create("client");

	tcase_set_timeout(tc, 20);
	tcase_add_loop_test(tc, client_two_ranks, 0, 2);
	tcase_add_loop_test(tc, client_failures, 0, (int)(sizeof(failures) / sizeof(failures[0])));
	tcase_add_test(tc, client_wrong_version);
	tcase_add_loop_test(tc, detect_launcher_pmi, 0,
	                    (int)(sizeof(detect_cases) / sizeof(detect_cases[0])));
	suite_add_tcase(s, tc);
	tc = tcase_create("runtime");
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, runtime_exchange);
	tcase_add_test(tc, runtime_exchange_bad_value);
	tcase_add_test(tc, runtime_env_beats_pmi);
	tcase_add_test(tc, runtime_fork_child);
	tcase_add_test(tc, runtime_pmi_env_errors);
	tcase_add_test(tc, runtime_pmi_port);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(pmi_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
