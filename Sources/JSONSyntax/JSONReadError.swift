/// Why a text was not read as JSON: where (`line` and `column`, both from 1, the column in
/// bytes) and what was wrong, in words meant to be shown after a subject such as `config FILE:`.
///
/// Contract: `description` is `line L, column C: PROBLEM`. A key given twice in one object is
/// `duplicateKey`, with the key unescaped, so a reader can word that refusal its own way.
public struct JSONReadError: Error, CustomStringConvertible, Equatable, Sendable {
    /// What kind of problem stopped the reader.
    public enum Kind: Equatable, Sendable {
        /// Not JSON as RFC 8259 writes it, or past a bound (size, depth).
        case syntax
        /// The same key twice in one object, compared after unescaping as Swift strings.
        case duplicateKey(String)
    }

    public let kind: Kind
    public let line: Int
    public let column: Int
    public let problem: String

    public var description: String { "line \(line), column \(column): \(problem)" }
}
