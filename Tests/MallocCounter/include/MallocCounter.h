// Test-only malloc interposer: counts heap allocations made by the calling thread while
// counting is on. It replaces malloc and friends in the test executable and forwards to
// glibc's own entry points, so nothing else changes; under AddressSanitizer or ThreadSanitizer,
// which own malloc, it counts through their allocation hook instead. Never linked into a product.
#ifndef MEDIARELAY_MALLOC_COUNTER_H
#define MEDIARELAY_MALLOC_COUNTER_H
#include <stdint.h>
void malloc_counter_start(void);
/// Stops counting and returns the number of allocations since malloc_counter_start().
uint64_t malloc_counter_stop(void);
#endif
