import Foundation

/// A command run to its end, for the tests' tools (ip, promtool, readelf, systemd-analyze...):
/// its exit status and what it wrote, stdout and stderr together. The output goes through a
/// file rather than a pipe, so a command that leaves a child holding its stdout (a daemon it
/// started) still returns. A process a test must stop itself is a `ChildProcess`.
public enum Command {
    /// A step of a test's set-up that failed: what was done, and what it said.
    public struct Failure: Error, CustomStringConvertible {
        public let step: String
        public let output: String
        public var description: String { "\(step): \(output)" }

        public init(step: String, output: String) {
            self.step = step
            self.output = output
        }
    }

    /// Runs `executable` (a path) with `arguments` to its end.
    public static func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("command-\(UUID().uuidString).out")
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: file) }
        let handle = try FileHandle(forWritingTo: file)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try handle.close()
        return (process.terminationStatus, (try? String(contentsOf: file, encoding: .utf8)) ?? "")
    }

    /// Runs `arguments`, the first found on PATH (through /usr/bin/env).
    public static func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        try run("/usr/bin/env", arguments)
    }

    /// `run`, throwing `Failure` with the command and its output unless it succeeds.
    @discardableResult
    public static func check(_ arguments: [String]) throws -> String {
        let result = try run(arguments)
        guard result.status == 0 else { throw Failure(step: arguments.joined(separator: " "), output: result.output) }
        return result.output
    }
}
