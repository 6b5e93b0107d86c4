/// The bounds one `HTTPServer` enforces, so that no client can make it hold unbounded memory,
/// sockets or time.
///
/// Contract: every limit applies per connection except `maxConnections`. A request whose head
/// (request line and headers) exceeds `maxHeaderBytes` gets 431, a body over `maxBodyBytes`
/// gets 413; both close the connection. Durations are in seconds and must be positive.
public struct HTTPLimits: Sendable, Equatable {
    /// Request line plus headers, including their line ends.
    public var maxHeaderBytes: Int
    /// Content-Length the server accepts.
    public var maxBodyBytes: Int
    /// Time a client has to send one complete request, counted from the connection's accept or
    /// from the request's first byte. Counting from the start (not from the last byte) is what
    /// defeats slowloris clients that trickle one byte at a time.
    public var readTimeout: Double
    /// Time an open keep-alive connection may sit between requests.
    public var idleTimeout: Double
    /// Time a response may make no progress because the client does not read it.
    public var writeTimeout: Double
    /// Connections served at once. Beyond it a new connection gets 503 and is closed.
    public var maxConnections: Int

    public init(
        maxHeaderBytes: Int = 8 * 1024,
        maxBodyBytes: Int = 64 * 1024,
        readTimeout: Double = 5,
        idleTimeout: Double = 30,
        writeTimeout: Double = 10,
        maxConnections: Int = 64
    ) {
        precondition(maxHeaderBytes > 0 && maxBodyBytes >= 0 && maxConnections > 0)
        precondition(readTimeout > 0 && idleTimeout > 0 && writeTimeout > 0)
        self.maxHeaderBytes = maxHeaderBytes
        self.maxBodyBytes = maxBodyBytes
        self.readTimeout = readTimeout
        self.idleTimeout = idleTimeout
        self.writeTimeout = writeTimeout
        self.maxConnections = maxConnections
    }
}
