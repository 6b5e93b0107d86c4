import Foundation
import XCTest

/// Finds the outside tools the deploy checks run. Under `make test` (which sets
/// MEDIARELAY_REQUIRE_TEST_TOOLS=1 after `make test-deps` installed them) a missing tool is a
/// failure; elsewhere the test is skipped with the command that installs the tool.
enum TestToolSupport {
    /// Thrown under MEDIARELAY_REQUIRE_TEST_TOOLS=1; XCTest records it as the test's failure.
    struct MissingTool: Error, CustomStringConvertible {
        let description: String
    }

    static var toolsAreRequired: Bool {
        ProcessInfo.processInfo.environment["MEDIARELAY_REQUIRE_TEST_TOOLS"] == "1"
    }

    /// The path of the executable `name`, looked for in `preferred` first, then on PATH.
    /// - Parameter install: how to get it, for the message when it is missing.
    static func require(_ name: String, install: String, preferred: [URL] = []) throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let directories = preferred.map(\.path) + path.split(separator: ":").map(String.init)
        for directory in directories {
            let candidate = URL(fileURLWithPath: directory).appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        let message = "\(name) is not installed on this host (\(install); `make test-deps` does it)"
        if toolsAreRequired { throw MissingTool(description: message) }
        throw XCTSkip(message)
    }
}
