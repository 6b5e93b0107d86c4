import ClientSockets
import Glibc
import SystemSupport

/// CPU time of a process as the kernel accounts it in /proc/PID/stat, used to check the
/// relay's self-reported CPU against an outside view.
public struct ProcessCPU: Sendable, Equatable {
    /// utime, in clock ticks.
    public let userTicks: UInt64
    /// stime, in clock ticks.
    public let systemTicks: UInt64

    /// Parses the text of /proc/PID/stat. The command name (field 2) is in parentheses and may
    /// itself contain spaces and parentheses, so fields are counted from the LAST ')'.
    public init?(statText: String) {
        guard let close = statText.lastIndex(of: ")") else { return nil }
        let rest = statText[statText.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
        // rest[0] is field 3 (state); utime is field 14 and stime field 15.
        guard rest.count > 12, let u = UInt64(rest[11]), let s = UInt64(rest[12]) else { return nil }
        userTicks = u
        systemTicks = s
    }

    /// Reads /proc/PID/stat, or nil when the process is gone or the file is unreadable.
    public static func read(pid: Int32) -> ProcessCPU? {
        guard let text = readSmallFile("/proc/\(pid)/stat") else { return nil }
        return ProcessCPU(statText: text)
    }

    /// utime + stime in seconds, using the kernel's USER_HZ from sysconf(_SC_CLK_TCK).
    public var seconds: Double {
        Double(userTicks + systemTicks) / Double(Self.ticksPerSecond)
    }

    public static let ticksPerSecond: Int = max(1, sysconf(Int32(_SC_CLK_TCK)))
}

/// CPU seconds this process has used (getrusage RUSAGE_SELF), user + system.
public func ownCPUSeconds() -> Double { CPUTime.process().totalSeconds }
