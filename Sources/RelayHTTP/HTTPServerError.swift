/// Why an `HTTPServer` could not start.
///
/// Contract: `description` is one line a user can act on: the address, what failed in words,
/// the C errno name, and what to try, e.g. "cannot listen on 127.0.0.1:9480: address already
/// in use (EADDRINUSE); another socket holds this port (another mediarelay?): stop it or choose
/// another --http port".
public struct HTTPServerError: Error, CustomStringConvertible, Equatable {
    /// The address as the user would write it: "127.0.0.1:9480" or "[::1]:9480".
    public var address: String
    /// The errno of the failed call, or nil when the address itself was not acceptable.
    public var errno: Int32?
    public var description: String

    init(address: String, errno: Int32?, description: String) {
        self.address = address
        self.errno = errno
        self.description = description
    }
}
