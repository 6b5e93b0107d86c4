import Glibc

/// glibc's malloc_trim(0): gives the free pages of every malloc arena back to the kernel.
/// A free() returns memory only from the top of a heap, so what connections freed in the
/// middle of a worker's arena (a TLS session's buffers, between longer-lived allocations)
/// stays resident, and a flood of connections that came and went would leave the relay as
/// large as at its peak. Glibc's Swift module leaves out malloc.h, so the function is looked
/// up once by name; where it is missing (another C library) trimming does nothing.
public enum HeapTrim {
    private typealias Function = @convention(c) (Int) -> Int32

    private static let function: Function? = dlsym(nil, "malloc_trim").map { unsafeBitCast($0, to: Function.self) }

    /// Releases what every arena holds free; costs a walk of the free chunks, so callers do it
    /// when much was freed, not per allocation.
    public static func releaseFreePages() {
        _ = function?(0)
    }
}
