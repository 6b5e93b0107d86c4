import FastPath

/// Says in the log that the kernel fast path refused entries: a full table (or a map update
/// the kernel refused) leaves new flows on the user-space path, which is correct but costs
/// what the fast path was there to save, and only a counter moved before. At most one line a
/// minute, read on the main thread once a second from the fast path's own counts, so no
/// worker logs or locks for it.
struct FastPathRefusalLog {
    static let interval = 60.0
    private var seen = 0
    private var lastLine = -Double.infinity

    /// The line to log now, if any. `now` is monotonic seconds.
    mutating func line(_ kernel: KernelFastPath, now: Double) -> String? {
        let refusals = kernel.refusals
        guard refusals > seen, now - lastLine >= FastPathRefusalLog.interval else { return nil }
        let fresh = refusals - seen
        seen = refusals
        lastLine = now
        let full = kernel.fullRefusals
        let why = full > 0 ? "its table is full (\(kernel.count) of \(kernel.capacity) entries; \(full) refused for room so far)"
            : "the kernel refused the map update"
        return "fast path: \(fresh) new flow entr\(fresh == 1 ? "y" : "ies") refused: \(why); those flows stay on the "
            + "user-space path (\(refusals) refused in all; at most one such line a minute)"
    }
}
