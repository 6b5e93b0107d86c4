/// Why a JSON request body was refused: one sentence meant for the API's `{"error": ...}`.
///
/// Contract: `description` names the field (when there is one), what was expected and what was
/// found, e.g. `field "legs" must be an integer in 2...16, got true`.
public struct JSONObjectError: Error, CustomStringConvertible, Equatable, Sendable {
    /// The offending field, or nil when the body as a whole was wrong.
    public var field: String?
    public var description: String

    public init(field: String?, description: String) {
        self.field = field
        self.description = description
    }
}
