import Foundation
import Glibc

/// A child process that is always stopped: `stop()` or deinit sends SIGTERM, then SIGKILL.
/// Its stdout and stderr are collected together (`text`); its stdin is a pipe the test writes
/// (`write`, `closeInput`) when asked for with `input: true`, /dev/null otherwise.
public final class ChildProcess {
    public let process = Process()
    private let output = Pipe()
    private let input: Pipe?
    private let collected = LineCollector()

    public init(_ executable: String, _ arguments: [String], input: Bool = false) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = output
        self.input = input ? Pipe() : nil
        process.standardInput = self.input ?? FileHandle.nullDevice
        let collector = collected
        output.fileHandleForReading.readabilityHandler = { collector.append($0.availableData) }
        try process.run()
    }

    /// Runs `executable` to its end, at most `seconds`, and returns its exit status (nil when
    /// it had to be stopped) and its output.
    public static func run(_ executable: String, _ arguments: [String], seconds: Double = 30) throws -> (status: Int32?, output: String) {
        let child = try ChildProcess(executable, arguments)
        let status = child.wait(seconds: seconds)
        return (status, child.text)
    }

    /// stdout and stderr so far, interleaved.
    public var text: String { collected.text }

    /// Writes `text` to the child's stdin (with `input: true`; ignored otherwise, and once the
    /// child has gone).
    public func write(_ text: String) {
        guard let input, process.isRunning else { return }
        try? input.fileHandleForWriting.write(contentsOf: Data(text.utf8))
    }

    /// Closes the child's stdin: an end of file for it.
    public func closeInput() {
        try? input?.fileHandleForWriting.close()
    }

    /// Waits at most `seconds` for `text` to appear in the output; returns whether it did.
    public func waitForText(_ text: String, seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if self.text.contains(text) { return true }
            usleep(10_000)
        }
        return self.text.contains(text)
    }

    /// Waits for the exit at most `seconds`; stops the process if it has not exited by then.
    /// Returns the exit status, or nil when it had to be stopped.
    public func wait(seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            stop()
            return nil
        }
        process.waitUntilExit()
        drain()
        return process.terminationStatus
    }

    public func stop() {
        closeInput()
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        drain()
    }

    /// Reads what the handler has not yet seen, so `text` is complete after an exit.
    private func drain() {
        output.fileHandleForReading.readabilityHandler = nil
        if let rest = try? output.fileHandleForReading.readToEnd() { collected.append(rest) }
    }

    deinit { if process.isRunning { stop() } }
}
