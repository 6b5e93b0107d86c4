import Foundation
import RelayHTTP
import XCTest

final class JSONObjectReaderTests: XCTestCase {
    private let sessionKeys: Set<String> = ["legs", "dscp", "allowed_sources", "relatch_after_seconds"]

    private func reader(_ json: String, allowedKeys: Set<String>? = nil) throws(JSONObjectError) -> JSONObjectReader {
        try JSONObjectReader(Array(json.utf8), allowedKeys: allowedKeys ?? sessionKeys)
    }

    /// The error `body` throws: the description, or a failure when nothing was thrown.
    private func failure(_ body: () throws -> Void, file: StaticString = #filePath, line: UInt = #line) -> String {
        do {
            try body()
            XCTFail("expected an error", file: file, line: line)
            return ""
        } catch let error as JSONObjectError {
            return error.description
        } catch {
            XCTFail("not a JSONObjectError: \(error)", file: file, line: line)
            return ""
        }
    }

    func testValidBodyDecodes() throws {
        let body = try reader(#"{"legs": 3, "dscp": "class", "allowed_sources": ["10.0.0.0/8", "::1/128"]}"#)
        XCTAssertEqual(try body.int("legs", range: 2...16), 3)
        XCTAssertEqual(try body.string("dscp", oneOf: ["mirror", "class", "zero"]), "class")
        XCTAssertEqual(try body.stringArray("allowed_sources"), ["10.0.0.0/8", "::1/128"])
        XCTAssertNil(try body.int("relatch_after_seconds"), "absent is nil, for the caller's default")
    }

    /// JSONSerialization kept the last of two equal keys without a word.
    func testDuplicateKeysAreRefusedByName() {
        let text = failure { _ = try self.reader(#"{"legs": 2, "dscp": "zero", "legs": 16}"#) }
        XCTAssertEqual(text, #"field "legs" appears more than once; give each field once"#)
        let escaped = failure { _ = try self.reader(#"{"dscp": "zero", "d\u0073cp": "class"}"#) }
        XCTAssertTrue(escaped.contains(#"field "dscp""#), escaped)
    }

    func testEmptyBodyIsAnEmptyObject() throws {
        XCTAssertTrue(try reader("").object.isEmpty)
        XCTAssertTrue(try reader(" \r\n").object.isEmpty)
    }

    func testNotAnObject() {
        for text in ["[1, 2]", "3", "\"legs\"", "null", "true"] {
            XCTAssertEqual(failure { _ = try reader(text) }, "body must be a JSON object", text)
        }
    }

    /// The reason (line, column, what was expected) follows; it was "body is not valid JSON" alone.
    func testInvalidJSON() {
        for text in ["{", "{\"legs\": }", "legs=3", "{'legs': 3}", "\u{0}", "{\"legs\": 2} x"] {
            XCTAssertTrue(failure { _ = try reader(text) }.hasPrefix("body is not valid JSON (line 1, column "), text)
        }
        XCTAssertEqual(failure { _ = try reader("{\"legs\": 2,}") }, "body is not valid JSON (line 1, column 12: expected a string key after ',', found '}')")
    }

    func testNestingIsBounded() {
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        XCTAssertEqual(failure { _ = try reader("{\"legs\": \(deep)}") }, "body is not valid JSON (line 1, column 73: nesting deeper than 64 levels)")
    }

    func testUnknownFieldIsNamed() {
        let message = failure { _ = try reader(#"{"legs": 2, "lgs": 3}"#) }
        XCTAssertTrue(message.hasPrefix(#"unknown field "lgs""#), message)
        XCTAssertTrue(message.contains("allowed_sources, dscp, legs, relatch_after_seconds"), message)
    }

    func testBoolIsNotAnInt() {
        XCTAssertEqual(
            failure { _ = try reader(#"{"legs": true}"#).int("legs", range: 2...16) },
            #"field "legs" must be an integer in 2...16, got true"#)
        XCTAssertEqual(
            failure { _ = try reader(#"{"legs": false}"#).int("legs") },
            #"field "legs" must be an integer, got false"#)
    }

    func testFractionIsNotAnInt() {
        XCTAssertEqual(
            failure { _ = try reader(#"{"legs": 2.5}"#).int("legs", range: 2...16) },
            #"field "legs" must be an integer in 2...16, got 2.5"#)
        XCTAssertTrue(failure { _ = try reader(#"{"legs": 2.0}"#).int("legs") }.contains("must be an integer"))
        XCTAssertTrue(failure { _ = try reader(#"{"legs": 1e3}"#).int("legs") }.contains("must be an integer"))
        XCTAssertTrue(
            failure { _ = try reader(#"{"legs": 123456789012345678901234}"#).int("legs") }.contains("must be an integer"))
    }

    func testIntOutOfRange() {
        XCTAssertEqual(
            failure { _ = try reader(#"{"legs": 17}"#).int("legs", range: 2...16) },
            #"field "legs" must be an integer in 2...16, got 17"#)
        XCTAssertEqual(try reader(#"{"legs": 16}"#).int("legs", range: 2...16), 16)
    }

    func testWrongTypes() {
        XCTAssertEqual(
            failure { _ = try reader(#"{"legs": "2"}"#).int("legs") }, #"field "legs" must be an integer, got "2""#)
        XCTAssertEqual(failure { _ = try reader(#"{"legs": null}"#).int("legs") }, #"field "legs" must be an integer, got null"#)
        XCTAssertEqual(
            failure { _ = try reader(#"{"dscp": 3}"#).string("dscp") }, #"field "dscp" must be a string, got 3"#)
        XCTAssertEqual(
            failure { _ = try reader(#"{"dscp": "red"}"#).string("dscp", oneOf: ["mirror", "class", "zero"]) },
            #"field "dscp" must be one of "mirror", "class", "zero", got "red""#)
        XCTAssertEqual(
            failure { _ = try reader(#"{"allowed_sources": "10.0.0.0/8"}"#).stringArray("allowed_sources") },
            #"field "allowed_sources" must be an array of strings, got "10.0.0.0/8""#)
        XCTAssertEqual(
            failure { _ = try reader(#"{"allowed_sources": ["a", {}]}"#).stringArray("allowed_sources") },
            #"field "allowed_sources" must be an array of strings, element 1 is an object"#)
        XCTAssertEqual(failure { _ = try reader(#"{"legs": 1}"#).bool("legs") }, #"field "legs" must be true or false, got 1"#)
    }

    func testLongValuesAreShortenedInErrors() {
        let long = String(repeating: "x", count: 10_000)
        let message = failure { _ = try reader("{\"dscp\": \"\(long)\"}").string("dscp", oneOf: ["zero"]) }
        XCTAssertLessThan(message.count, 120, message)
        XCTAssertTrue(message.hasSuffix("..."), message)
    }

    func testErrorNamesTheField() {
        do {
            _ = try reader(#"{"legs": []}"#).int("legs")
            XCTFail("expected an error")
        } catch {
            XCTAssertEqual(error.field, "legs")
        }
    }
}
