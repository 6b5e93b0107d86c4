import Glibc

/// glibc's heap, kept so that memory a flood of connections freed goes back to the kernel.
///
/// `useOneArena()` at start: every thread allocates from the main arena (each thread keeps its
/// own small-allocation cache, so threads seldom meet on its lock, and the packet path
/// allocates nothing). With an arena per worker, the free space at the top of a worker's arena
/// is beyond `malloc_trim`'s reach: glibc shrinks a thread arena's top only inside `free`, and
/// only past a threshold that grows with the largest block it has unmapped, so the memory of
/// connections that came and went could stay resident for good.
///
/// `releaseFreePages()`: `malloc_trim(0)`. A `free` returns memory only from the top of a heap,
/// so what connections freed in the middle (a TLS session's buffers, between longer-lived
/// allocations) stays resident until trimmed.
///
/// Glibc's Swift module leaves out malloc.h, so both functions are looked up once by name;
/// where they are missing (another C library) both calls do nothing.
public enum HeapTrim {
    private typealias Trim = @convention(c) (Int) -> Int32
    private typealias Option = @convention(c) (Int32, Int32) -> Int32

    private static let trim: Trim? = dlsym(nil, "malloc_trim").map { unsafeBitCast($0, to: Trim.self) }
    private static let option: Option? = dlsym(nil, "mallopt").map { unsafeBitCast($0, to: Option.self) }
    /// M_ARENA_MAX in malloc.h.
    private static let arenaMaximum: Int32 = -8

    /// Makes every thread started after this call allocate from the main arena. Returns false
    /// where the C library refused or has no such option.
    @discardableResult
    public static func useOneArena() -> Bool {
        option?(arenaMaximum, 1) == 1
    }

    /// Releases what the heap holds free; costs a walk of the free chunks, so callers do it
    /// when much was freed, not per allocation.
    public static func releaseFreePages() {
        _ = trim?(0)
    }
}
