import Foundation

/// uclient processes run together (it takes ~4 s whatever it sends), each into its own file,
/// stopped at a deadline.
struct UclientRun {
    let name: String
    let arguments: [String]
    let status: Int32
    let output: String

    static func runAll(_ runs: [(String, [String])], seconds: Double = 90) throws -> [UclientRun] {
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
