import Glibc
import SystemSupport

/// Why the fast path could not load, attach, or take an entry: one line that says what was
/// being done and, where the host is the cause, what it lacks. A relay that meets one at
/// start-up logs it and runs on the user-space path.
public struct FastPathError: Error, Sendable, CustomStringConvertible {
    public let description: String

    init(_ description: String) { self.description = description }

    /// `operation` failed with `code` (an errno); `detail` is libbpf's own last word, if any.
    static func failed(_ operation: String, code: Int32, detail: String? = nil) -> FastPathError {
        var text = "fast path: \(operation): \(SystemCallError.explain(code))"
        if code == EPERM || code == EACCES {
            // libbpf's own words here guess at a missing kernel option: the cause is privilege.
            return FastPathError(text + " (loading BPF needs CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON: run as root or grant them)")
        }
        if let detail, !detail.isEmpty { text += " [libbpf: \(detail)]" }
        return FastPathError(text)
    }

    /// What the host must have before anything is loaded: BTF (the program finds a kernel
    /// field by it) and Linux 6.6 or later (tcx links, owned by the process).
    static func checkHost() throws(FastPathError) {
        guard access("/sys/kernel/btf/vmlinux", R_OK) == 0 else {
            throw FastPathError("fast path: the kernel has no BTF (/sys/kernel/btf/vmlinux is missing; it needs CONFIG_DEBUG_INFO_BTF)")
        }
        var names = utsname()
        uname(&names)
        let release = withUnsafeBytes(of: &names.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let parts = release.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
        guard parts.count == 2, (parts[0], parts[1]) >= (6, 6) else {
            throw FastPathError("fast path: Linux \(release) is too old (tcx links need 6.6 or later)")
        }
    }
}
