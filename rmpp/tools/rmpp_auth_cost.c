/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rmpp_auth_cost - CPU cost of the frame MAC (rmpp_auth.h): seal + verify of
 * frames of the given sizes, in CPU time of this thread (CLOCK_THREAD_CPUTIME_ID),
 * so that other processes on a loaded machine do not count.
 *   usage: rmpp-auth-cost [SIZE...]      (default: 88 1500 8960)
 * Prints, per size, ns per seal+verify and the resulting MB/s.
 */
#include "rmpp_auth.h"
#include "p3num.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	static const size_t defaults[] = {88, 1500, 8960};
	static unsigned char frame[65536 + RMPP_AUTH_LEN];
	char err[160];
	int n = argc > 1 ? argc - 1 : 3;
	struct rmpp_auth a;

	setenv("P3_RMPP_AUTH", "on", 1);
	setenv("P3_RMPP_AUTH_KEY",
	       "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", 0);
	if (rmpp_auth_init(&a, err, sizeof(err)) != 0) {
		fprintf(stderr, "rmpp-auth-cost: %s\n", err);
		return 1;
	}
	memset(frame, 0x5a, sizeof(frame));
	for (int i = 0; i < n; i++) {
		size_t len = argc > 1 ? p3num_arg_u64("rmpp-auth-cost", "SIZE", argv[i + 1], 0,
		                                      65536, P3NUM_BASE0)
		                      : defaults[i];
		int iters = (int)(200000000 / (len + 200));
		size_t body;
		uint64_t seq;
		double t0 = cpu_ns();
		for (int k = 0; k < iters; k++) {
			size_t m = rmpp_auth_seal(&a, frame, len);
			if (rmpp_auth_verify(&a, frame, m, &body, &seq) != 0)
				return 1;
		}
		double per = (cpu_ns() - t0) / iters;
		printf("%6zu-byte frame: seal+verify %8.0f ns CPU (%.0f MB/s)\n", len, per,
		       len / per * 1e3);
	}
	return 0;
}
