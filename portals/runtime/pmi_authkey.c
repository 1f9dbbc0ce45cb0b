/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmi_authkey.c - the job's rmpp frame-authentication key (P3_RMPP_AUTH=on,
 * rmpp/rmpp_auth.h) handed out through the launcher's PMI, for jobs that
 * srun or hydra's mpiexec start (ptlrun draws one itself).
 *
 * Rank 0 draws 32 random bytes (getrandom) and puts them, as 64 hex digits,
 * in the job's key space under "p3authkey"; after a fence every rank reads
 * rank 0's value and sets P3_RMPP_AUTH_KEY, which the rmpp endpoints
 * created next read.  Why not a hash of the launcher's job id with a site
 * secret: the job id is public and the secret would have to be readable by
 * every user's processes on every node, so any user could compute any job's
 * key.  The key space is readable only by the job's own processes (the PMI
 * server answers the fd or socket it handed them; PMIx authenticates its
 * clients), so a fresh random key there is known to the job alone.  What it
 * does not hide it from: whoever can read the launcher's own control
 * traffic between nodes (hydra's proxies and Slurm's PMI-2 tree speak plain
 * TCP; PMIx over munge-authenticated but unencrypted links likewise).
 *
 * A key already in the environment wins (the exchange still takes part in
 * the fence, so ranks that have one and ranks that lack one cannot
 * deadlock each other).
 */
#include "config.h"

#include "rt.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#define AUTHKEY_PMI_KEY "p3authkey"
#define AUTHKEY_BYTES   32

/* P3_RMPP_AUTH asks for authentication (auth.c's spelling: on or 1). */
static int auth_wanted(void)
{
	const char *m = getenv("P3_RMPP_AUTH");
	return m && (!strcasecmp(m, "on") || !strcmp(m, "1"));
}

static int is_key(const char *s)
{
	if (strlen(s) != 2 * AUTHKEY_BYTES)
		return 0;
	return strspn(s, "0123456789abcdefABCDEF") == 2 * AUTHKEY_BYTES;
}

static int draw_key(char hex[2 * AUTHKEY_BYTES + 1], char *err, size_t errlen)
{
	uint8_t key[AUTHKEY_BYTES];
	if (getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key)) {
		snprintf(err, errlen, "P3_RMPP_AUTH=on: getrandom failed: no job key");
		return -1;
	}
	for (size_t i = 0; i < sizeof(key); i++)
		snprintf(hex + 2 * i, 3, "%02x", key[i]);
	return 0;
}

int p3_rt_pmi_authkey(struct p3_pmi_session *s, char *err, size_t errlen)
{
	const struct p3_pmi_ops *ops = s->ps_ops;
	char hex[2 * AUTHKEY_BYTES + 1];

	if (!auth_wanted())
		return 0;
	if (s->ps_rank == 0) {
		if (draw_key(hex, err, errlen) != 0 ||
		    ops->put(s, AUTHKEY_PMI_KEY, hex, err, errlen))
			return -1;
	}
	if (ops->fence(s, err, errlen) != 0 ||
	    ops->get(s, 0, AUTHKEY_PMI_KEY, hex, sizeof(hex), err, errlen) != 0)
		return -1;
	if (!is_key(hex)) {
		snprintf(err, errlen, "PMI: %s from rank 0 is not %d hex digits", AUTHKEY_PMI_KEY,
		         2 * AUTHKEY_BYTES);
		return -1;
	}
	const char *mine = getenv("P3_RMPP_AUTH_KEY");
	if (mine && *mine)
		return 0;
	/* the rmpp NAL reads its key from the environment, as under ptlrun;
	 * set once, at PMI start-up, before any endpoint exists */
	if (setenv("P3_RMPP_AUTH_KEY", hex, 1) != 0) {
		snprintf(err, errlen, "P3_RMPP_AUTH=on: cannot set P3_RMPP_AUTH_KEY");
		return -1;
	}
	return 0;
}
