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
    /// Time a client has to send a request's head (request line and headers), counted from the
    /// connection's accept or from the request's first byte. Counting from the start (not from
    /// the last byte) is what defeats slowloris clients that trickle one byte at a time; it is
    /// shorter than `readTimeout` because a head is a few hundred bytes sent at once.
    public var headTimeout: Double
    /// Time a client has to send one complete request, head and body, counted the same way.
    public var readTimeout: Double
    /// Time an open keep-alive connection may sit between requests.
    public var idleTimeout: Double
    /// Time a response may make no progress because the client does not read it.
    public var writeTimeout: Double
    /// Connections served at once. At the cap a new connection takes the slot of the one that
    /// has waited longest on an incomplete request, else of the one idle longest; only when
    /// every slot is busy answering does it get 503 and close.
    public var maxConnections: Int

    public init(
        maxHeaderBytes: Int = 8 * 1024,
        maxBodyBytes: Int = 64 * 1024,
        headTimeout: Double = 3,
        readTimeout: Double = 5,
        idleTimeout: Double = 30,
        writeTimeout: Double = 10,
        maxConnections: Int = 64
    ) {
        precondition(maxHeaderBytes > 0 && maxBodyBytes >= 0 && maxConnections > 0)
        precondition(headTimeout > 0 && readTimeout > 0 && idleTimeout > 0 && writeTimeout > 0)
        self.maxHeaderBytes = maxHeaderBytes
        self.maxBodyBytes = maxBodyBytes
        self.headTimeout = headTimeout
        self.readTimeout = readTimeout
        self.idleTimeout = idleTimeout
        self.writeTimeout = writeTimeout
        self.maxConnections = maxConnections
    }
}
