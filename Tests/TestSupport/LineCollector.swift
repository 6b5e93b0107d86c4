import Foundation

/// Collects a child's output as it arrives, from the pipe's handler thread, for the test's
/// thread to read.
public final class LineCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()

    public init() {}

    public func append(_ chunk: Data) { lock.withLock { data.append(chunk) } }
    public var text: String { lock.withLock { String(decoding: data, as: UTF8.self) } }

    /// The token right after `marker` in the text so far, if it has appeared.
    public func find(after marker: String) -> String? {
        guard let range = text.range(of: marker) else { return nil }
        return String(text[range.upperBound...].prefix { $0.isNumber })
    }
}
