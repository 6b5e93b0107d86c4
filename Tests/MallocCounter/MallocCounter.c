#include "MallocCounter.h"
#include <stddef.h>
#include <errno.h>

// Thread-local so that other threads (XCTest's, the kernel's helpers) never disturb a count.
static __thread int counting;
static __thread uint64_t allocations;

void malloc_counter_start(void) { allocations = 0; counting = 1; }
uint64_t malloc_counter_stop(void) { counting = 0; return allocations; }

static inline void note(void) { if (counting) allocations++; }

#if defined(__has_feature) && (__has_feature(address_sanitizer) || __has_feature(thread_sanitizer))
// Under AddressSanitizer or ThreadSanitizer (make test-asan, test-tsan) the sanitizer owns
// malloc and free: replacing them would hand it blocks it never allocated. It calls a hook on
// every allocation instead, so the zero-allocation tests still count under it.
#include <sanitizer/allocator_interface.h>

static void on_allocation(const volatile void *pointer, size_t size) { (void)pointer; (void)size; note(); }
static void on_free(const volatile void *pointer) { (void)pointer; }

__attribute__((constructor)) static void install_hooks(void) {
    __sanitizer_install_malloc_and_free_hooks(on_allocation, on_free);
}
#else
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

void *malloc(size_t size) { note(); return __libc_malloc(size); }
void *calloc(size_t count, size_t size) { note(); return __libc_calloc(count, size); }
void *realloc(void *pointer, size_t size) { note(); return __libc_realloc(pointer, size); }
void *aligned_alloc(size_t alignment, size_t size) { note(); return __libc_memalign(alignment, size); }
void *memalign(size_t alignment, size_t size) { note(); return __libc_memalign(alignment, size); }
int posix_memalign(void **out, size_t alignment, size_t size) {
    note();
    if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL) return ENOMEM;
    *out = pointer;
    return 0;
}
#endif
