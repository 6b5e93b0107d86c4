import TLS

/// A server and a client session joined in memory: ciphertext moves between them only when
/// the harness moves it, so a test can stop between any two flights, fill a buffer, or put
/// foreign bytes on the wire.
final class SessionPairHarness {
    let server: TLSSession
    let client: TLSSession
    /// Ciphertext taken from one side that the other has not yet taken (its buffer was full).
    private var toServer: [UInt8] = []
    private var toClient: [UInt8] = []

    init(server: TLSServerContext, client: TLSClientContext, serverName: String? = "localhost", bufferBytes: Int = 20 << 10) throws {
        self.server = try TLSSession(server: server, bufferBytes: bufferBytes)
        self.client = try TLSSession(client: client, serverName: serverName, bufferBytes: bufferBytes)
    }

    /// Moves ciphertext each way, as much as each side takes; returns the bytes delivered.
    @discardableResult
    func pump() -> Int {
        Self.move(from: client, into: &toServer, to: server) + Self.move(from: server, into: &toClient, to: client)
    }

    /// Runs both handshakes until each is done or failed and nothing is left in flight.
    func handshake() -> (server: TLSHandshakeStep, client: TLSHandshakeStep) {
        var steps = (server: TLSHandshakeStep.inProgress, client: TLSHandshakeStep.inProgress)
        for _ in 0..<100 {
            steps.client = client.handshake()
            steps.server = server.handshake()
            if pump() == 0 && !inFlight { break }
        }
        return steps
    }

    /// Whether ciphertext waits in either session or between them.
    var inFlight: Bool {
        !toServer.isEmpty || !toClient.isEmpty || client.pendingCiphertext > 0 || server.pendingCiphertext > 0
    }

    /// Writes `bytes` from `writer` whole, moving and reading on the other side between
    /// writes when the writer's buffer is full; returns what `reader` got (and how its last
    /// read ended) once nothing more moves.
    func transfer(_ bytes: [UInt8], from writer: TLSSession, to reader: TLSSession) -> (received: [UInt8], last: TLSRead) {
        var received: [UInt8] = []
        var last = TLSRead.wantMore
        var written = false
        for _ in 0..<1000 {
            if !written { written = bytes.withUnsafeBytes { writer.writePlaintext($0) } }
            let moved = pump()
            let read = readAll(reader)
            received += read.bytes
            last = read.last
            if written && moved == 0 && read.bytes.isEmpty { break }
        }
        return (received, last)
    }

    /// Everything `session` can decrypt now, and the read that ended it.
    func readAll(_ session: TLSSession) -> (bytes: [UInt8], last: TLSRead) {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let read = buffer.withUnsafeMutableBytes { session.readPlaintext(into: $0) }
            guard case .bytes(let count) = read else { return (bytes, read) }
            bytes += buffer[0..<count]
        }
    }

    /// Takes every byte `source` has waiting into `queue`, then gives `target` as much of
    /// `queue` as it takes.
    private static func move(from source: TLSSession, into queue: inout [UInt8], to target: TLSSession) -> Int {
        var chunk = [UInt8](repeating: 0, count: 8192)
        while true {
            let taken = chunk.withUnsafeMutableBytes { source.takeCiphertext(into: $0) }
            if taken == 0 { break }
            queue += chunk[0..<taken]
        }
        let delivered = queue.withUnsafeBytes { target.receiveCiphertext($0) }
        queue.removeFirst(delivered)
        return delivered
    }
}
