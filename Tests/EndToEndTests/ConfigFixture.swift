import Foundation
import XCTest

/// A config file in a fresh temporary directory, removed when the test ends.
struct ConfigFixture {
    let directory: URL
    let path: String

    init(_ test: XCTestCase, _ json: String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mediarelay-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        path = directory.appendingPathComponent("config.json").path
        let directory = self.directory
        test.addTeardownBlock { try? FileManager.default.removeItem(at: directory) }
        try write(json)
    }

    /// Replaces the file's contents (a new file renamed over the old, as editors and config
    /// management tools do, so the relay never reads half a file).
    func write(_ json: String) throws {
        try Data(json.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}

/// Waits until `condition` holds, up to a generous deadline for a loaded machine.
func eventually(seconds: Double = 20, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(20_000)
    }
    return condition()
}
