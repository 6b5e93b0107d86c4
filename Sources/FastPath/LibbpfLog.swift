import CBPF
import Glibc
import Synchronization

/// libbpf's warnings, kept instead of printed, so that a failure can be told in one line with
/// libbpf's own reason. libbpf has one print callback per process; this is installed once.
enum LibbpfLog {
    private static let lines = Mutex<[String]>([])
    private static let installed: Void = {
        _ = libbpf_set_print { level, format, arguments in
            guard level != LIBBPF_DEBUG, let format, let arguments else { return 0 }
            var buffer = [UInt8](repeating: 0, count: 1024)
            let written = buffer.withUnsafeMutableBufferPointer { raw in
                raw.withMemoryRebound(to: CChar.self) { Int(vsnprintf($0.baseAddress, $0.count, format, arguments)) }
            }
            let text = String(decoding: buffer.prefix(min(max(written, 0), buffer.count - 1)), as: UTF8.self)
            LibbpfLog.lines.withLock { lines in
                lines.append(contentsOf: text.split(separator: "\n").map { String($0.hasPrefix("libbpf: ") ? $0.dropFirst(8) : $0) })
                if lines.count > 64 { lines.removeFirst(lines.count - 64) }
            }
            return 0
        }
    }()

    static func install() { installed }

    /// Forgets what came before an operation, so that its failure names its own cause.
    static func clear() { lines.withLock { $0.removeAll() } }

    /// The last lines libbpf wrote (the verifier's last ones name its refusal), joined.
    static func last(_ count: Int = 2) -> String {
        lines.withLock { $0.suffix(count).map { $0.trimmingCharacters() }.joined(separator: " / ") }
    }
}

private extension String {
    func trimmingCharacters() -> String {
        let kept = drop { $0 == " " || $0 == "\t" }
        return String(kept.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
