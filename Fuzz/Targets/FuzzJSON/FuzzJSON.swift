import FuzzSupport
import JSONSyntax

/// JSONSyntax's parser (the config file's and the control API's): any bytes are a value or an
/// error, and a value written back out (`rendered`) reads back as the same value.
func fuzzJSON(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let input = FuzzInput(data, count)
    guard let value = try? JSONValue(parsing: input.rest) else { return 0 }
    let written = Array(value.rendered.utf8)
    guard let again = try? JSONValue(parsing: written) else {
        expect(false, "the rendering of a parsed value does not parse: \(value.rendered)")
        return 0
    }
    expect(again == value, "a value changed through rendering: \(value.rendered)")
    return 0
}
