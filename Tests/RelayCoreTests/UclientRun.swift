import Foundation

/// uclient processes run together (it takes ~4 s whatever it sends), each into its own file,
/// stopped at a deadline.
struct UclientRun {
    let name: String
    let arguments: [String]
    let status: Int32
    let output: String

    /// What uclient prints when it drew, for the second channel of one allocation, the random
    /// channel number it had already bound to its first peer: it binds a random number to the
    /// peer's port + 1 and then another to the peer's port, and a server must refuse the second
    /// when both draws are equal (RFC 8656 section 11.2), so the run ends with status 1 for a
    /// reason of uclient's own making. Such a run is run again, once.
    static let ownChannelCollision = "channel bind: error 400 (Channel number bound to another peer)"

    static func runAll(_ runs: [(String, [String])], seconds: Double = 90) throws -> [UclientRun] {
        let first = try runOnce(runs, seconds: seconds)
        let collided = first.filter { $0.status != 0 && $0.output.contains(ownChannelCollision) }
        guard !collided.isEmpty else { return first }
        let again = try runOnce(collided.map { ($0.name, $0.arguments) }, seconds: seconds)
        return first.map { run in
            guard let rerun = again.first(where: { $0.name == run.name }) else { return run }
            return UclientRun(name: run.name, arguments: run.arguments, status: rerun.status,
                              output: "(run again: the first drew one channel number twice)\n" + rerun.output)
        }
    }

    private static func runOnce(_ runs: [(String, [String])], seconds: Double) throws -> [UclientRun] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("turn-uclient-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var running: [(String, [String], Process, URL)] = []
        for (index, (name, arguments)) in runs.enumerated() {
            let output = directory.appendingPathComponent("\(index).log")
            _ = FileManager.default.createFile(atPath: output.path, contents: nil)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/turnutils_uclient")
            process.arguments = arguments
            let handle = try FileHandle(forWritingTo: output)
            process.standardOutput = handle
            process.standardError = handle
            try process.run()
            running.append((name, arguments, process, output))
        }
        let deadline = DispatchWorkItem { for entry in running where entry.2.isRunning { entry.2.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: deadline)
        defer { deadline.cancel() }
        return running.map { name, arguments, process, file in
            process.waitUntilExit()
            return UclientRun(name: name, arguments: arguments, status: process.terminationStatus,
                              output: (try? String(contentsOf: file, encoding: .utf8)) ?? "")
        }
    }
}
