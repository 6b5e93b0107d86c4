import JSONSyntax
import RelayHTTP
import XCTest

final class JSONDuplicateKeyTests: XCTestCase {
    private func first(_ json: String) -> String? {
        JSONDuplicateKey.first(in: Array(json.utf8))
    }

    func testDistinctKeysPass() {
        XCTAssertNil(first(#"{"a": 1, "b": [1, {"a": 2}], "c": {"a": {"a": 3}}}"#), "the same key in different objects")
        XCTAssertNil(first(#"[{"a": 1}, {"a": 2}]"#))
        XCTAssertNil(first(#"{"a": "a", "b": "a"}"#), "values are not keys")
        XCTAssertNil(first(#"{"a": ["b", "b"], "b": 1}"#), "strings in arrays are not keys")
        XCTAssertNil(first(""))
    }

    func testRepeatedKeysAreFoundAtAnyDepth() {
        XCTAssertEqual(first(#"{"a": 1, "a": 2}"#), "a")
        XCTAssertEqual(first(#"{"x": [{"k": 1, "k": 2}]}"#), "k")
        XCTAssertEqual(first(#"{"o": {"a": 1}, "b": 1, "o": 2}"#), "o", "a closed inner object does not hide the outer key")
    }

    func testKeysAreComparedUnescaped() {
        XCTAssertEqual(first(#"{"legs": 1, "l\u0065gs": 2}"#), "legs")
        XCTAssertEqual(first(#"{"a\"b": 1, "a\u0022b": 2}"#), "a\"b")
        XCTAssertEqual(first(#"{"\ud83d\ude00": 1, "😀": 2}"#), "😀", "a surrogate pair is one scalar")
        XCTAssertEqual(first("{\"caf\u{E9}\": 1, \"cafe\u{301}\": 2}"), "caf\u{E9}", "canonically equivalent spellings")
        XCTAssertNil(first(#"{"a\\": 1, "a": 2}"#), "an escaped backslash is not an escaped quote")
        XCTAssertNil(first(#"{"{\"": 1, "}": 2}"#), "braces inside strings are text")
    }

    /// Any bytes, including truncated escapes and lone surrogates: an answer, never a trap,
    /// and no recursion to overflow however deep the nesting.
    func testAnyInputIsTotal() {
        var generator = SplitMix64(seed: 0x6a73_6f6e_6b65_7973)
        let alphabet = Array(#"{}[]":,\u0dD8ab 1"#.utf8)
        for _ in 0..<2000 {
            let bytes = (0..<Int(generator.next() % 64)).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }
            _ = JSONDuplicateKey.first(in: bytes)
        }
        for text in [#"{"a"#, #"{"\"#, #"{"\u12"#, #"{"\ud800": 1, "\ud800x": 2}"#, "\"", "}}}]]]"] {
            _ = first(text)
        }
        XCTAssertNil(JSONDuplicateKey.first(in: [UInt8](repeating: UInt8(ascii: "["), count: 1_000_000)))
    }
}
