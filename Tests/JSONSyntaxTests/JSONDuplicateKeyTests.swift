import JSONSyntax
import XCTest

/// The reader refuses a key given twice in one object, which JSONSerialization and JSONDecoder
/// resolve silently (keeping the last, or one of them).
final class JSONDuplicateKeyTests: XCTestCase {
    /// The repeated key the reader names, nil when it read the text, or "(syntax)" when it refused
    /// the text for something else.
    private func repeated(_ json: String) -> String? {
        do {
            _ = try JSONValue(parsing: Array(json.utf8))
            return nil
        } catch {
            if case .duplicateKey(let key) = error.kind { return key }
            return "(syntax) \(error)"
        }
    }

    func testDistinctKeysPass() {
        XCTAssertNil(repeated(#"{"a": 1, "b": [1, {"a": 2}], "c": {"a": {"a": 3}}}"#), "the same key in different objects")
        XCTAssertNil(repeated(#"[{"a": 1}, {"a": 2}]"#))
        XCTAssertNil(repeated(#"{"a": "a", "b": "a"}"#), "values are not keys")
        XCTAssertNil(repeated(#"{"a": ["b", "b"], "b": 1}"#), "strings in arrays are not keys")
        XCTAssertNil(repeated(#"{"a\\": 1, "a": 2}"#), "an escaped backslash is not an escaped quote")
        XCTAssertNil(repeated(#"{"{\"": 1, "}": 2}"#), "braces inside strings are text")
    }

    func testRepeatedKeysAreFoundAtAnyDepth() {
        XCTAssertEqual(repeated(#"{"a": 1, "a": 2}"#), "a")
        XCTAssertEqual(repeated(#"{"x": [{"k": 1, "k": 2}]}"#), "k")
        XCTAssertEqual(repeated(#"{"o": {"a": 1}, "b": 1, "o": 2}"#), "o", "a closed inner object does not hide the outer key")
    }

    func testKeysAreComparedUnescaped() {
        XCTAssertEqual(repeated(#"{"legs": 1, "l\u0065gs": 2}"#), "legs")
        XCTAssertEqual(repeated(#"{"a\"b": 1, "a\u0022b": 2}"#), "a\"b")
        XCTAssertEqual(repeated(#"{"\ud83d\ude00": 1, "😀": 2}"#), "😀", "a surrogate pair is one scalar")
        XCTAssertEqual(repeated("{\"caf\u{E9}\": 1, \"cafe\u{301}\": 2}"), "caf\u{E9}", "canonically equivalent spellings")
    }

    /// The error points at the second spelling of the key.
    func testTheRefusalSaysWhere() throws {
        XCTAssertThrowsError(try JSONValue(parsing: Array("{\n  \"a\": 1,\n  \"a\": 2\n}".utf8))) { error in
            let error = error as! JSONReadError
            XCTAssertEqual(error.kind, .duplicateKey("a"))
            XCTAssertEqual(error.description, #"line 3, column 3: key "a" appears more than once in one object"#)
        }
    }
}
