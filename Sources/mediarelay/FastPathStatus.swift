import FastPath

/// How the fast path's program is attached to one interface.
enum FastPathAttachment: String, Sendable {
    case tc, xdp
}

/// What the fast path is in this process, settled once at start: what `--fast-path` asked
/// for, each interface's outcome, and the loaded program (nil when off, with `reason`).
///
/// Contract: `kernel` is non-nil exactly when at least one interface is attached; it is the
/// process's one `KernelFastPath`, alive until the process ends (so are its links: the
/// program leaves the interfaces with the process, kill -9 included).
struct FastPathStatus: Sendable {
    /// One interface the fast path tried: `mode` nil and `reason` set when it is not on there.
    struct Interface: Equatable, Sendable {
        let name: String
        let mode: FastPathAttachment?
        let reason: String?
    }

    let requested: FastPathMode
    let interfaces: [Interface]
    /// Why it is off; nil while on.
    let reason: String?
    let kernel: KernelFastPath?

    static func off(_ requested: FastPathMode, _ reason: String, interfaces: [Interface] = []) -> FastPathStatus {
        FastPathStatus(requested: requested, interfaces: interfaces, reason: reason, kernel: nil)
    }

    /// "tc on lo, xdp on eth0": the interfaces it runs on.
    var attachedText: String {
        interfaces.compactMap { interface in interface.mode.map { "\($0.rawValue) on \(interface.name)" } }.joined(separator: ", ")
    }
}
