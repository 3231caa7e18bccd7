#ifndef RUNNEL_LIBFUZZER_H
#define RUNNEL_LIBFUZZER_H

#include <stddef.h>
#include <stdint.h>

// libFuzzer's driver (compiler-rt's FuzzerDriver.cpp, linked by -sanitize=fuzzer): parses the
// command line and runs the fuzzing loop on `callback`, as libFuzzer's own main does.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
