import Glibc
import SystemSupport

/// Reads a file of at most `limit` bytes (proc files report size 0, so read until EOF).
package func readSmallFile(_ path: String, limit: Int = 65536) -> String? {
    guard case .done(let opened) = SystemCall.outcome({ Int(open(path, O_RDONLY | O_CLOEXEC)) }) else { return nil }
    let fd = Int32(opened)
    defer { SystemCall.close(fd) }
    var bytes = [UInt8](repeating: 0, count: limit)
    var used = 0
    while used < bytes.count {
        let outcome = bytes.withUnsafeMutableBytes { raw in
            SystemCall.outcome { read(fd, raw.baseAddress! + used, raw.count - used) }
        }
        guard case .done(let n) = outcome, n > 0 else { break }
        used += n
    }
    return String(decoding: bytes[0..<used], as: UTF8.self)
}
