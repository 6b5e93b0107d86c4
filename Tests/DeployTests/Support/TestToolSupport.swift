import Foundation
import TestSupport

/// Finds the outside tools the deploy checks run, by name on PATH, where HostRequirement checks a
/// path already known: kubernetes-validate, for one, sits wherever pip put it. Missing is a skip,
/// or a failure under `make test`, by HostRequirement's one rule.
enum TestToolSupport {
    /// The path of the executable `name`, looked for in `preferred` first, then on PATH.
    /// - Parameter install: how to get it, for the message when it is missing.
    static func require(_ name: String, install: String, preferred: [URL] = []) throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let directories = preferred.map(\.path) + path.split(separator: ":").map(String.init)
        let found = directories.lazy.map { URL(fileURLWithPath: $0).appendingPathComponent(name).path }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
        try HostRequirement.require(found != nil, "\(name) is not installed on this host (\(install); `make test-deps` does it)")
        return found ?? name
    }
}
