/* SPDX-License-Identifier: BSD-3-Clause */
/* cma.c - single copy between processes with process_vm_readv/writev (Linux
 * cross-memory attach): probes and the iovec-to-iovec copy. */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "shmem.h"

#define SHM_CMA_BATCH 64 /* iovec entries per process_vm_readv call */

/* A word with a known value that peers read to find out whether
 * process_vm_readv works against this process. */
static volatile uint64_t shm_cma_probe_word = 0x5033434d41505242ull; /* "P3CMAPRB" */

uint64_t shm_cma_probe_addr(void)
{
	return (uint64_t)(uintptr_t)&shm_cma_probe_word;
}

uint64_t shm_cma_probe_value(void)
{
	return shm_cma_probe_word;
}

int shm_cma_probe_peer(uint32_t ospid, uint64_t addr, uint64_t value)
{
#ifdef HAVE_PROCESS_VM_READV
	uint64_t got = 0;
	struct iovec l = {&got, sizeof(got)};
	struct iovec r = {(void *)(uintptr_t)addr, sizeof(got)};

	ssize_t n = process_vm_readv((pid_t)ospid, &l, 1, &r, 1, 0);
	if (n != (ssize_t)sizeof(got))
		return n < 0 ? -errno : -EIO;
	return got == value ? 0 : -EIO;
#else
	(void)ospid;
	(void)addr;
	(void)value;
	return -ENOSYS;
#endif
}

int shm_cma_probe_self(void)
{
	return shm_cma_probe_peer((uint32_t)getpid(), shm_cma_probe_addr(), shm_cma_probe_value());
}

int shm_cma_read(uint32_t ospid, const struct iovec *liov, size_t lniov, uint64_t loffset,
                 const struct shm_cma_iov *riov, size_t rniov, uint64_t len)
{
	return shm_cma_copy(ospid, 0, liov, lniov, loffset, riov, rniov, 0, len);
}

int shm_cma_copy(uint32_t ospid, int write, const struct iovec *liov, size_t lniov,
                 uint64_t loffset, const struct shm_cma_iov *riov, size_t rniov, uint64_t roffset,
                 uint64_t len)
{
#ifdef HAVE_PROCESS_VM_READV
	size_t li = 0, ri = 0;
	uint64_t loff = loffset, roff = roffset;

	/* skip to the offsets */
	while (li < lniov && loff >= liov[li].iov_len) {
		loff -= liov[li].iov_len;
		li++;
	}
	while (ri < rniov && roff >= riov[ri].ci_len) {
		roff -= riov[ri].ci_len;
		ri++;
	}
	while (len > 0) {
		struct iovec l[SHM_CMA_BATCH], r[SHM_CMA_BATCH];
		size_t nl = 0, nr = 0;
		uint64_t lbytes = 0, rbytes = 0;

		/* local side: up to len bytes */
		for (size_t i = li; i < lniov && nl < SHM_CMA_BATCH && lbytes < len; i++) {
			uint64_t off = i == li ? loff : 0;
			uint64_t n = liov[i].iov_len - off;

			if (n > len - lbytes)
				n = len - lbytes;
			if (n == 0)
				continue;
			l[nl].iov_base = (uint8_t *)liov[i].iov_base + off;
			l[nl].iov_len = n;
			nl++;
			lbytes += n;
		}
		if (lbytes == 0)
			return -EINVAL; /* local iovec shorter than len */
		/* remote side: the same number of bytes */
		for (size_t i = ri; i < rniov && nr < SHM_CMA_BATCH && rbytes < lbytes; i++) {
			uint64_t off = i == ri ? roff : 0;
			uint64_t rl = riov[i].ci_len;
			if (off > rl)
				return -EPROTO;
			uint64_t n = rl - off;

			if (n > lbytes - rbytes)
				n = lbytes - rbytes;
			if (n == 0)
				continue;
			r[nr].iov_base = (void *)(uintptr_t)(riov[i].ci_addr + off);
			r[nr].iov_len = n;
			nr++;
			rbytes += n;
		}
		if (rbytes == 0)
			return -EPROTO; /* remote iovec shorter than len */
		if (rbytes < lbytes) {
			/* trim the local side to what the remote batch covers */
			uint64_t keep = rbytes;
			size_t i;
			for (i = 0; i < nl && keep > 0; i++) {
				if (l[i].iov_len > keep)
					l[i].iov_len = keep;
				keep -= l[i].iov_len;
			}
			nl = i;
		}

		ssize_t got =
		    write ? process_vm_writev((pid_t)ospid, l, (unsigned long)nl, r, (unsigned long)nr, 0)
		          : process_vm_readv((pid_t)ospid, l, (unsigned long)nl, r, (unsigned long)nr, 0);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (got == 0)
			return -EFAULT;

		/* advance both cursors by got */
		uint64_t adv = (uint64_t)got;
		len -= adv;
		for (uint64_t a = adv; a > 0;) {
			uint64_t n = liov[li].iov_len - loff;
			if (a < n) {
				loff += a;
				a = 0;
			} else {
				a -= n;
				li++;
				loff = 0;
			}
		}
		for (uint64_t a = adv; a > 0;) {
			uint64_t n = riov[ri].ci_len - roff;
			if (a < n) {
				roff += a;
				a = 0;
			} else {
				a -= n;
				ri++;
				roff = 0;
			}
		}
		/* skip empty entries */
		while (li < lniov && loff >= liov[li].iov_len) {
			loff -= liov[li].iov_len;
			li++;
		}
		while (ri < rniov && roff >= riov[ri].ci_len) {
			roff -= riov[ri].ci_len;
			ri++;
		}
	}
	return 0;
#else
	(void)ospid;
	(void)write;
	(void)liov;
	(void)lniov;
	(void)loffset;
	(void)riov;
	(void)rniov;
	(void)roffset;
	(void)len;
	return -ENOSYS;
#endif
}
