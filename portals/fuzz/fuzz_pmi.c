/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_pmi.c - libFuzzer target for the PMI-1 client (portals/runtime/pmi.c)
 * as a process manager would feed it: the input is everything the server
 * says, written into one end of a socketpair that is then shut for writing;
 * the client does the start-up handshake, a put, a barrier and a get on the
 * other end.  Any answer must end in success or an error message — no
 * crash, no read past a line, no hang (EOF ends every wait). */
#include "config.h"

#include "rt.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct p3_pmi pmi;
	char err[P3_RT_ERRLEN], val[256];
	int sv[2];

	if (size > 60000) /* the socket buffer holds it all: no writer thread */
		return 0;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return 0;
	if (size && write(sv[1], data, size) != (ssize_t)size) {
		close(sv[0]);
		close(sv[1]);
		return 0;
	}
	shutdown(sv[1], SHUT_WR);
	/* the session owns sv[0] from here: p3_pmi_close closes it, also
	 * after a failed handshake */
	if (p3_pmi_open_fd(&pmi, sv[0], 0, 2, 1000, err, sizeof(err)) == 0 &&
	    p3_pmi_put(&pmi, "p3-0", "0a000001:0007", err, sizeof(err)) == 0 &&
	    p3_pmi_barrier(&pmi, err, sizeof(err)) == 0)
		(void)p3_pmi_get(&pmi, "p3-1", val, sizeof(val), err, sizeof(err));
	p3_pmi_close(&pmi);
	close(sv[1]);
	return 0;
}
