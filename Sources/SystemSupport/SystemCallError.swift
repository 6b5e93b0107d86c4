import Glibc

/// A failed system call: what was being done, the errno by its C name and meaning, the address
/// involved where there is one, and what a user can do about it where there is something to say.
/// EAGAIN never becomes one of these on a non-blocking call: it is a result ("nothing now").
///
/// `description` reads e.g. "cannot bind UDP 127.0.0.1:80: address already in use (EADDRINUSE);
/// another socket holds this port", so logs stay searchable by the C name and by the meaning.
public struct SystemCallError: Error, Sendable, Equatable, CustomStringConvertible {
    public var operation: String
    public var errno: Int32
    /// The address (or file) the call was about, as the user wrote it.
    public var address: String?
    public var advice: String?

    public init(_ operation: String, errno: Int32, address: String? = nil, advice: String? = nil) {
        self.operation = operation
        self.errno = errno
        self.address = address
        self.advice = advice
    }

    public var description: String {
        var text = operation
        if let address { text += " \(address)" }
        text += ": \(SystemCallError.explain(errno))"
        if let advice { text += "; \(advice)" }
        return text
    }

    /// "address already in use (EADDRINUSE)": strerror in lower case, then the C name.
    public static func explain(_ code: Int32) -> String {
        "\(String(cString: strerror(code)).lowercased()) (\(ErrnoName.of(code)))"
    }
}
