import DatagramEngine
import Foundation
import Glibc
import SystemSupport

/// Reads the `--config` file (and the other files options name) with plain system calls, so that every refusal is one sentence a
/// person can act on (never a Cocoa error domain) and nothing can make start-up or a reload
/// wait: a FIFO, a directory or a device is refused by its type before a byte is read.
enum ConfigFileReader {
    /// Why the file could not be read; `description` is the problem after `config PATH: `,
    /// before what the caller expected there.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// At most `limit` bytes of the regular file at `path`.
    static func read(_ path: String, limit: Int) throws(Failure) -> Data {
        var status = stat()
        _ = try call("stat") { Int(stat(path, &status)) }
        // Checked before opening: opening a FIFO or a device can block or have side effects.
        try requireRegular(status)
        // O_NONBLOCK: if the path was swapped for a FIFO since stat, open and read return at
        // once instead of waiting for a writer; fstat then refuses it.
        let fd = Int32(try call("open") { Int(open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) })
        defer { SystemCall.close(fd) }
        _ = try call("fstat") { Int(fstat(fd, &status)) }
        try requireRegular(status)
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while data.count < limit {
            let wanted = limit - data.count
            let count = try call("read") { chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, min($0.count, wanted)) } }
            if count == 0 { break }
            data.append(contentsOf: chunk[0..<count])
        }
        return data
    }

    private static func requireRegular(_ status: stat) throws(Failure) {
        let kind: String
        switch status.st_mode & S_IFMT {
        case S_IFREG: return
        case S_IFDIR: kind = "a directory"
        case S_IFIFO: kind = "a FIFO (named pipe)"
        case S_IFCHR: kind = "a character device"
        case S_IFBLK: kind = "a block device"
        case S_IFSOCK: kind = "a socket"
        default: kind = "of an unknown kind"
        }
        throw Failure(description: "is \(kind), not a regular file")
    }

    /// One call through the gate; EAGAIN (a FIFO swapped in after stat) is a failure here too.
    private static func call(_ name: String, _ body: () -> Int) throws(Failure) -> Int {
        switch SystemCall.outcome(body) {
        case .done(let result): return result
        case .wouldBlock: throw failure(name, EAGAIN)
        case .failed(let code): throw failure(name, code)
        }
    }

    private static func failure(_ call: String, _ code: Int32) -> Failure {
        let error = SystemCallError(call, errno: code)
        return Failure(description: "cannot read it (\(error))")
    }
}
