/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Corpus replayer: runs a fuzz target over every file of the directories
 * given, so the corpora replay as ordinary tests (under ASan/UBSan in CI)
 * without libFuzzer. Prints "N passed, 0 failed"; a crash fails the test.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		perror(path);
		return -1;
	}
	uint8_t *buf = malloc(1 << 20);
	size_t len = buf ? fread(buf, 1, 1 << 20, f) : 0;
	fclose(f);
	if (buf == NULL) {
		return -1;
	}
	/* Copy to an exact-size allocation so ASan sees overreads. */
	uint8_t *exact = malloc(len ? len : 1);
	memcpy(exact, buf, len);
	free(buf);
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	return 0;
}

int main(int argc, char **argv)
{
	LLVMFuzzerInitialize(&argc, &argv);
	int count = 0;
	for (int i = 1; i < argc; i++) {
		DIR *d = opendir(argv[i]);
		if (d == NULL) {
			count += replay_file(argv[i]) == 0;
			continue;
		}
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			if (e->d_name[0] == '.') {
				continue;
			}
			char path[4096];
			snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
			count += replay_file(path) == 0;
		}
		closedir(d);
	}
	printf("%d passed, 0 failed\n", count);
	return count > 0 ? 0 : 1;
}
