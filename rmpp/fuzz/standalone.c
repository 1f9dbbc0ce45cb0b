/* SPDX-License-Identifier: BSD-3-Clause */
/* standalone.c - replay files or directories through LLVMFuzzerTestOneInput
 * without libFuzzer (used by "make check" on the committed corpus). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return -1;
	}
	static uint8_t buf[1 << 20];
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	/* exact-size copy so that ASan catches reads past the input */
	uint8_t *copy = malloc(n ? n : 1);
	memcpy(copy, buf, n);
	LLVMFuzzerTestOneInput(copy, n);
	free(copy);
	return 0;
}

int main(int argc, char **argv)
{
	int files = 0, errors = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) {
			perror(argv[i]);
			errors++;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			errors += run_file(argv[i]) != 0;
			files++;
			continue;
		}
		DIR *d = opendir(argv[i]);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			char path[4096];
			snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
			errors += run_file(path) != 0;
			files++;
		}
		if (d)
			closedir(d);
	}
	printf("rmpp parser: %d inputs replayed, %d unreadable\n", files, errors);
	return errors || files == 0 ? 1 : 0;
}
