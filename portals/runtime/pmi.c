/* SPDX-License-Identifier: BSD-3-Clause */
/* pmi.c - a PMI-1 wire-protocol client, as hydra's mpiexec and Slurm's
 * pmi plugin speak it: newline-terminated "cmd=NAME key=value ..." lines
 * over the descriptor in PMI_FD (or a TCP connection to PMI_PORT after the
 * PMI_ID handshake).  One request in flight at a time; every reply read is
 * bounded in size and in time. */
#include "config.h"

#include "rt.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PMI_DEFAULT_TIMEOUT_MS (120 * 1000)

static int64_t pmi_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int pmi_write_all(struct p3_pmi *pmi, const char *buf, size_t len, char *err, size_t errlen)
{
	while (len > 0) {
		ssize_t n = send(pmi->pm_fd, buf, len, MSG_NOSIGNAL);

		if (n < 0 && errno == ENOTSOCK)
			n = write(pmi->pm_fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(err, errlen, "PMI: write to the process manager failed: %s",
			         strerror(errno));
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Send one request line (the caller's text without the newline). */
static int pmi_send(struct p3_pmi *pmi, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int pmi_send(struct p3_pmi *pmi, char *err, size_t errlen, const char *fmt, ...)
{
	char line[P3_PMI_LINE_MAX];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line) - 1) {
		snprintf(err, errlen, "PMI: request longer than %d bytes", P3_PMI_LINE_MAX - 2);
		return -1;
	}
	line[n++] = '\n';
	return pmi_write_all(pmi, line, (size_t)n, err, errlen);
}

/* Read one reply line into line (NUL-terminated, newline stripped). */
static int pmi_recv_line(struct p3_pmi *pmi, char *line, char *err, size_t errlen)
{
	int64_t deadline = pmi->pm_timeout_ms < 0 ? -1 : pmi_now_ms() + pmi->pm_timeout_ms;

	for (;;) {
		char *nl = memchr(pmi->pm_in, '\n', pmi->pm_inlen);
		struct pollfd pfd = {.fd = pmi->pm_fd, .events = POLLIN};
		int wait_ms = -1;
		ssize_t n;
		int rc;

		if (nl) {
			size_t len = (size_t)(nl - pmi->pm_in);

			memcpy(line, pmi->pm_in, len);
			line[len] = '\0';
			pmi->pm_inlen -= len + 1;
			memmove(pmi->pm_in, nl + 1, pmi->pm_inlen);
			return 0;
		}
		if (pmi->pm_inlen == sizeof(pmi->pm_in)) {
			snprintf(err, errlen, "PMI: reply line longer than %d bytes",
			         P3_PMI_LINE_MAX - 1);
			return -1;
		}
		if (deadline >= 0) {
			int64_t left = deadline - pmi_now_ms();

			if (left <= 0) {
				snprintf(err, errlen,
				         "PMI: no reply from the process manager within %d ms "
				         "(P3_RUNTIME_PMI_TIMEOUT)",
				         pmi->pm_timeout_ms);
				return -1;
			}
			wait_ms = left > 1000000 ? 1000000 : (int)left;
		}
		rc = poll(&pfd, 1, wait_ms);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0) {
			snprintf(err, errlen, "PMI: poll failed: %s", strerror(errno));
			return -1;
		}
		if (rc == 0)
			continue;
		n = read(pmi->pm_fd, pmi->pm_in + pmi->pm_inlen,
		         sizeof(pmi->pm_in) - pmi->pm_inlen);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			snprintf(err, errlen, "PMI: read from the process manager failed: %s",
			         strerror(errno));
			return -1;
		}
		if (n == 0) {
			snprintf(err, errlen, "PMI: the process manager closed the connection");
			return -1;
		}
		if (memchr(pmi->pm_in + pmi->pm_inlen, '\0', (size_t)n)) {
			snprintf(err, errlen, "PMI: NUL byte in a reply");
			return -1;
		}
		pmi->pm_inlen += (size_t)n;
	}
}

/* Value of `key` in a reply line, copied into val (at most vallen - 1
 * bytes); 0, or -1 if absent or too long. */
static int pmi_field(const char *line, const char *key, char *val, size_t vallen)
{
	size_t klen = strlen(key);
	const char *p = line;

	while (*p) {
		const char *end;
		size_t len;

		while (*p == ' ')
			p++;
		end = strchr(p, ' ');
		if (!end)
			end = p + strlen(p);
		if ((size_t)(end - p) > klen && strncmp(p, key, klen) == 0 && p[klen] == '=') {
			len = (size_t)(end - p) - klen - 1;
			if (len >= vallen)
				return -1;
			memcpy(val, p + klen + 1, len);
			val[len] = '\0';
			return 0;
		}
		p = end;
	}
	return -1;
}

/* Read a reply, require cmd=<expect> and rc=0 when rc is present. */
static int pmi_expect(struct p3_pmi *pmi, const char *expect, char *line, char *err, size_t errlen)
{
	char cmd[64], rc[16], msg[128];

	if (pmi_recv_line(pmi, line, err, errlen) != 0)
		return -1;
	if (pmi_field(line, "cmd", cmd, sizeof(cmd)) != 0 || strcmp(cmd, expect) != 0) {
		snprintf(err, errlen, "PMI: expected cmd=%s, got '%.120s'", expect, line);
		return -1;
	}
	if (pmi_field(line, "rc", rc, sizeof(rc)) == 0 && strcmp(rc, "0") != 0) {
		if (pmi_field(line, "msg", msg, sizeof(msg)) != 0)
			strcpy(msg, "no message");
		snprintf(err, errlen, "PMI: %s failed: rc=%s (%s)", expect, rc, msg);
		return -1;
	}
	return 0;
}

static int pmi_int_field(const char *line, const char *key, int *out_p, char *err, size_t errlen)
{
	char val[32];
	uint32_t v;

	if (pmi_field(line, key, val, sizeof(val)) != 0) {
		snprintf(err, errlen, "PMI: reply '%.120s' has no %s", line, key);
		return -1;
	}
	if (p3_rt_parse_u32(key, val, &v, err, errlen) != 0 || v > INT32_MAX) {
		snprintf(err, errlen, "PMI: reply '%.120s': bad %s", line, key);
		return -1;
	}
	*out_p = (int)v;
	return 0;
}

/* Tokens must not contain the protocol's separators. */
static int pmi_check_token(const char *what, const char *s, size_t max, char *err, size_t errlen)
{
	if (*s == '\0' || strlen(s) >= max || strpbrk(s, " =\n\r")) {
		snprintf(err, errlen,
		         "PMI: %s '%.64s' is empty, too long or contains ' ', '=' "
		         "or a newline",
		         what, s);
		return -1;
	}
	return 0;
}

static int pmi_handshake(struct p3_pmi *pmi, char *err, size_t errlen)
{
	char line[P3_PMI_LINE_MAX];
	int v;

	if (pmi_send(pmi, err, errlen, "cmd=init pmi_version=1 pmi_subversion=1") != 0 ||
	    pmi_expect(pmi, "response_to_init", line, err, errlen) != 0)
		return -1;
	if (pmi_int_field(line, "pmi_version", &v, err, errlen) != 0)
		return -1;
	if (v != 1) {
		snprintf(err, errlen, "PMI: the process manager speaks PMI version %d, not 1", v);
		return -1;
	}
	if (pmi_send(pmi, err, errlen, "cmd=get_maxes") != 0 ||
	    pmi_expect(pmi, "maxes", line, err, errlen) != 0 ||
	    pmi_int_field(line, "keylen_max", &pmi->pm_keylen_max, err, errlen) != 0 ||
	    pmi_int_field(line, "vallen_max", &pmi->pm_vallen_max, err, errlen) != 0)
		return -1;
	if (pmi_send(pmi, err, errlen, "cmd=get_my_kvsname") != 0 ||
	    pmi_expect(pmi, "my_kvsname", line, err, errlen) != 0)
		return -1;
	if (pmi_field(line, "kvsname", pmi->pm_kvsname, sizeof(pmi->pm_kvsname)) != 0 ||
	    pmi->pm_kvsname[0] == '\0') {
		snprintf(err, errlen, "PMI: reply '%.120s' has no usable kvsname", line);
		return -1;
	}
	return 0;
}

int p3_pmi_open_fd(struct p3_pmi *pmi, int fd, int rank, int size, int timeout_ms, char *err,
                   size_t errlen)
{
	memset(pmi, 0, sizeof(*pmi));
	pmi->pm_fd = fd;
	pmi->pm_rank = rank;
	pmi->pm_size = size;
	pmi->pm_timeout_ms = timeout_ms;
	if (rank < 0 || size <= 0 || rank >= size || (unsigned int)size > P3_RT_MAX_RANKS) {
		snprintf(err, errlen, "PMI: rank %d of %d is not a valid position in a job", rank,
		         size);
		return -1;
	}
	return pmi_handshake(pmi, err, errlen);
}

static int pmi_env_int(const char *var, int *out_p, char *err, size_t errlen)
{
	const char *s = getenv(var);
	uint32_t v;

	if (!s) {
		snprintf(err, errlen, "%s is not set", var);
		return -1;
	}
	if (p3_rt_parse_u32(var, s, &v, err, errlen) != 0)
		return -1;
	if (v > INT32_MAX) {
		snprintf(err, errlen, "%s: bad value '%s': too large", var, s);
		return -1;
	}
	*out_p = (int)v;
	return 0;
}

/* PMI_PORT ("host:port"): connect, then "cmd=initack pmiid=ID", which the
 * manager answers with initack and "set size=", "set rank=", "set debug=". */
static int pmi_connect_port(struct p3_pmi *pmi, int *rank_p, int *size_p, char *err, size_t errlen)
{
	const char *port = getenv("PMI_PORT");
	const char *colon = strrchr(port, ':');
	char host[256], line[P3_PMI_LINE_MAX], cmd[16];
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res, *ai;
	int id, rc, fd = -1, i;

	if (!colon || colon == port || (size_t)(colon - port) >= sizeof(host) || !colon[1]) {
		snprintf(err, errlen, "PMI_PORT: bad value '%.64s': expected host:port", port);
		return -1;
	}
	if (pmi_env_int("PMI_ID", &id, err, errlen) != 0)
		return -1;
	memcpy(host, port, (size_t)(colon - port));
	host[colon - port] = '\0';
	rc = getaddrinfo(host, colon + 1, &hints, &res);
	if (rc != 0) {
		snprintf(err, errlen, "PMI_PORT: cannot resolve '%.64s': %s", port,
		         gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		snprintf(err, errlen, "PMI_PORT: cannot connect to '%.64s': %s", port,
		         strerror(errno));
		return -1;
	}
	pmi->pm_fd = fd;
	*rank_p = -1;
	*size_p = -1;
	if (pmi_send(pmi, err, errlen, "cmd=initack pmiid=%d", id) != 0 ||
	    pmi_expect(pmi, "initack", line, err, errlen) != 0)
		goto close_fd;
	for (i = 0; i < 3; i++) {
		if (pmi_expect(pmi, "set", line, err, errlen) != 0)
			goto close_fd;
		if (pmi_field(line, "size", cmd, sizeof(cmd)) == 0 &&
		    pmi_int_field(line, "size", size_p, err, errlen) != 0)
			goto close_fd;
		if (pmi_field(line, "rank", cmd, sizeof(cmd)) == 0 &&
		    pmi_int_field(line, "rank", rank_p, err, errlen) != 0)
			goto close_fd;
	}
	if (*rank_p < 0 || *size_p < 0) {
		snprintf(err, errlen, "PMI: the initack handshake gave no rank or size");
		goto close_fd;
	}
	return 0;

close_fd:
	close(fd);
	pmi->pm_fd = -1;
	return -1;
}

int p3_pmi_open_env(struct p3_pmi *pmi, char *err, size_t errlen)
{
	const char *tmo = getenv("P3_RUNTIME_PMI_TIMEOUT");
	int timeout_ms = PMI_DEFAULT_TIMEOUT_MS;
	int fd, rank, size, flags, own_fd = 0;
	uint32_t v;

	if (tmo) {
		if (p3_rt_parse_u32("P3_RUNTIME_PMI_TIMEOUT", tmo, &v, err, errlen) != 0)
			return -1;
		timeout_ms = v == 0 || v > INT32_MAX / 1000 ? -1 : (int)v * 1000;
	}
	memset(pmi, 0, sizeof(*pmi));
	pmi->pm_fd = -1;
	pmi->pm_timeout_ms = timeout_ms;
	if (getenv("PMI_FD")) {
		if (pmi_env_int("PMI_FD", &fd, err, errlen) != 0 ||
		    pmi_env_int("PMI_RANK", &rank, err, errlen) != 0 ||
		    pmi_env_int("PMI_SIZE", &size, err, errlen) != 0)
			return -1;
		flags = fcntl(fd, F_GETFD);
		if (flags < 0) {
			snprintf(err, errlen, "PMI_FD: bad value '%d': %s", fd, strerror(errno));
			return -1;
		}
		/* programs this process execs must not inherit our session */
		fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
	} else {
		if (pmi_connect_port(pmi, &rank, &size, err, errlen) != 0)
			return -1;
		fd = pmi->pm_fd;
		own_fd = 1;
	}
	if (p3_pmi_open_fd(pmi, fd, rank, size, timeout_ms, err, errlen) != 0) {
		if (own_fd)
			close(fd);
		pmi->pm_fd = -1;
		return -1;
	}
	return 0;
}

int p3_pmi_put(struct p3_pmi *pmi, const char *key, const char *value, char *err, size_t errlen)
{
	char line[P3_PMI_LINE_MAX];

	if (pmi_check_token("key", key, (size_t)pmi->pm_keylen_max, err, errlen) != 0 ||
	    pmi_check_token("value", value, (size_t)pmi->pm_vallen_max, err, errlen) != 0)
		return -1;
	if (pmi_send(pmi, err, errlen, "cmd=put kvsname=%s key=%s value=%s", pmi->pm_kvsname, key,
	             value) != 0)
		return -1;
	return pmi_expect(pmi, "put_result", line, err, errlen);
}

int p3_pmi_barrier(struct p3_pmi *pmi, char *err, size_t errlen)
{
	char line[P3_PMI_LINE_MAX];

	if (pmi_send(pmi, err, errlen, "cmd=barrier_in") != 0)
		return -1;
	return pmi_expect(pmi, "barrier_out", line, err, errlen);
}

int p3_pmi_get(struct p3_pmi *pmi, const char *key, char *value, size_t vallen, char *err,
               size_t errlen)
{
	char line[P3_PMI_LINE_MAX];

	if (pmi_check_token("key", key, (size_t)pmi->pm_keylen_max, err, errlen) != 0)
		return -1;
	if (pmi_send(pmi, err, errlen, "cmd=get kvsname=%s key=%s", pmi->pm_kvsname, key) != 0 ||
	    pmi_expect(pmi, "get_result", line, err, errlen) != 0)
		return -1;
	if (pmi_field(line, "value", value, vallen) != 0) {
		snprintf(err, errlen,
		         "PMI: get %s: reply '%.120s' has no value of at most %zu "
		         "bytes",
		         key, line, vallen - 1);
		return -1;
	}
	return 0;
}

void p3_pmi_close(struct p3_pmi *pmi)
{
	char line[P3_PMI_LINE_MAX], err[P3_RT_ERRLEN];

	if (pmi->pm_fd < 0)
		return;
	if (!pmi->pm_finalized) {
		pmi->pm_finalized = 1;
		if (pmi->pm_timeout_ms < 0 || pmi->pm_timeout_ms > 5000)
			pmi->pm_timeout_ms = 5000;
		/* best effort: a manager that is gone cannot be told */
		if (pmi_send(pmi, err, sizeof(err), "cmd=finalize") == 0)
			(void)pmi_expect(pmi, "finalize_ack", line, err, sizeof(err));
	}
	close(pmi->pm_fd);
	pmi->pm_fd = -1;
}
