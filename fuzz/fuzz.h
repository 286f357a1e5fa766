/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The libFuzzer entry points every target defines (see replay.c). */
#pragma once

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
