import Foundation
import XCTest

@testable import mediarelay

/// Parses with an in-memory file system so config tests never touch the disk.
func parse(_ arguments: [String], environment: [String: String] = [:], files: [String: String] = [:]) throws(OptionError) -> ParsedCommand {
    try ServerOptions.parse(arguments: arguments, environment: environment) { path in
        // A missing file fails as the real reader fails on a path that does not exist.
        guard let text = files[path] else { return try ConfigFileReader.read("/nonexistent/\(path)", limit: 16) }
        return Data(text.utf8)
    }
}

/// The options of a `.run`, failing the test for help, version or an error.
func runOptions(
    _ arguments: [String], environment: [String: String] = [:], files: [String: String] = [:],
    file: StaticString = #filePath, line: UInt = #line
) -> ServerOptions? {
    do {
        guard case .run(let options) = try parse(arguments, environment: environment, files: files) else {
            XCTFail("expected .run for \(arguments)", file: file, line: line)
            return nil
        }
        return options
    } catch {
        XCTFail("unexpected error for \(arguments): \(error)", file: file, line: line)
        return nil
    }
}

/// The error for a refused command line; checks it is one line starting with "mediarelay: "
/// and containing every string in `mentions`.
@discardableResult
func refusal(
    _ arguments: [String], environment: [String: String] = [:], files: [String: String] = [:],
    mentions: [String], file: StaticString = #filePath, line: UInt = #line
) -> OptionError? {
    do {
        let result = try parse(arguments, environment: environment, files: files)
        XCTFail("expected an error for \(arguments), got \(result)", file: file, line: line)
        return nil
    } catch {
        let text = error.description
        XCTAssertTrue(text.hasPrefix("mediarelay: "), "no prefix: \(text)", file: file, line: line)
        XCTAssertFalse(text.contains("\n") || text.contains("\r"), "more than one line: \(text)", file: file, line: line)
        for needle in mentions {
            XCTAssertTrue(text.contains(needle), "\"\(text)\" does not mention \(needle)", file: file, line: line)
        }
        XCTAssertEqual(error.exitCode, 2, file: file, line: line)
        return error
    }
}
