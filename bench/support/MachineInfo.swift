import ClientSockets
import Foundation
import Glibc

/// What a reader needs to judge a benchmark's numbers: kernel, CPU model, cores, date.
public struct MachineInfo: Sendable {
    public let kernel: String
    public let cpuModel: String
    public let cores: Int
    public let date: String

    public static func current() -> MachineInfo {
        var names = utsname()
        uname(&names)
        // `uname -r`: the release field.
        let kernel = withUnsafeBytes(of: names.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let cpuinfo = readSmallFile("/proc/cpuinfo") ?? ""
        return MachineInfo(kernel: kernel, cpuModel: cpuModel(cpuinfo: cpuinfo),
                           cores: sysconf(Int32(_SC_NPROCESSORS_ONLN)),
                           date: ISO8601DateFormatter().string(from: Date()))
    }

    /// The first `model name` line (x86), else `Model`/`CPU part` (ARM), else "unknown".
    public static func cpuModel(cpuinfo: String) -> String {
        for key in ["model name", "Model", "CPU part"] {
            for line in cpuinfo.split(separator: "\n") where line.hasPrefix(key) {
                if let colon = line.firstIndex(of: ":") {
                    return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
            }
        }
        return "unknown"
    }
}
