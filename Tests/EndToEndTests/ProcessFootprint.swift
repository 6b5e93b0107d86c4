import ClientSockets
import Foundation
import LoadGen

/// What a process holds of the host right now, read from /proc: its open descriptors
/// (entries of /proc/PID/fd) and its resident memory (VmRSS of /proc/PID/status).
struct ProcessFootprint: CustomStringConvertible {
    let descriptors: Int
    let residentKilobytes: Int

    init(pid: Int32) throws {
        descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
        guard let kilobytes = line?.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap({ Int($0) }) else {
            throw LoadError("no VmRSS line in /proc/\(pid)/status")
        }
        residentKilobytes = kilobytes
    }

    var description: String { "\(descriptors) descriptors, \(residentKilobytes) KiB resident" }
}
