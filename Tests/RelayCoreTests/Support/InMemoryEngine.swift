import DatagramEngine
import NetAddress
@testable import RelayCore
import SystemSupport

/// An in-memory stand-in for the engine, for testing table logic only: sockets are entries in
/// a dictionary (bound to the address asked for, a port 0 given the next of its own), what a
/// table enqueues is copied and kept, and a flush makes it `sent`. No descriptor, no system
/// call, no clock: a test delivers datagrams to the table itself and reads what came out.
/// What crosses a real kernel (batching, GSO, cmsgs, streams' flow) is the end-to-end tests'.
final class InMemoryEngine: TableEngine {
    /// One datagram a table enqueued, with its bytes copied at the time.
    struct Datagram {
        var socket: SocketID
        var destination: Endpoint
        /// The local address named for a socket bound to a wildcard address (all zero: none).
        var source: Endpoint
        var trafficClass: TrafficClass
        var bytes: [UInt8]
    }

    struct Socket {
        var owner: OwnerTag
        var local: Endpoint
        /// A socket bound for real before the table handed it over (a reserved port's).
        var adopted: UDPSocket?
        /// The DF bit asked for (nil: the system's default).
        var dontFragment: Bool?
    }

    /// A stream's bytes each way and what the table asked of it. Its input lies in memory it
    /// owns, so what `input` returns stays valid until the next `consume`, as the engine's does.
    final class Stream {
        private let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 8)
        private(set) var inputCount = 0
        var output: [UInt8] = []
        var deadline: UInt64?
        var closed = false

        deinit { memory.deallocate() }

        var input: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: memory[0..<inputCount]) }

        /// Bytes from the peer, after what is there.
        func arrive(_ bytes: [UInt8]) {
            precondition(inputCount + bytes.count <= memory.count, "more input than an in-memory stream holds")
            UnsafeMutableRawBufferPointer(rebasing: memory[inputCount...]).copyBytes(from: bytes)
            inputCount += bytes.count
        }

        func consume(_ count: Int) {
            let left = inputCount - count
            if left > 0 { memory.baseAddress!.copyMemory(from: memory.baseAddress! + count, byteCount: left) }
            inputCount = left
        }
    }

    let configuration: EngineConfiguration
    private(set) var sockets: [SocketID: Socket] = [:]
    private var streams: [SocketID: Stream] = [:]
    private var nextSlot: Int32 = 0
    private var nextPort: UInt16 = 30_000
    private var queued: [Datagram] = []
    /// Flushed datagrams the test has not taken yet (`takeSent`).
    private(set) var sent: [Datagram] = []
    var queuedCount: Int { queued.count }
    private(set) var flushes = 0

    init(configuration: EngineConfiguration = EngineConfiguration()) {
        self.configuration = configuration
    }

    /// The socket bound on `address`, if any.
    func socket(boundTo address: Endpoint) -> (id: SocketID, socket: Socket)? {
        sockets.first { $0.value.local == address }.map { ($0.key, $0.value) }
    }

    /// The datagrams flushed since the last call, oldest first.
    func takeSent() -> [Datagram] {
        defer { sent.removeAll() }
        return sent
    }

    private func newID() -> SocketID {
        nextSlot += 1
        return SocketID(slot: nextSlot, generation: 1)
    }

    func openDatagramSocket(binding address: Endpoint, options: SocketOptions, owner: OwnerTag,
                            dontFragment: Bool?) throws(SystemCallError) -> (socket: SocketID, local: Endpoint) {
        var local = address
        if local.port == 0 {
            local.port = nextPort
            nextPort += 1
        }
        let id = newID()
        sockets[id] = Socket(owner: owner, local: local, adopted: nil, dontFragment: dontFragment)
        return (id, local)
    }

    func adoptDatagramSocket(_ socket: UDPSocket, owner: OwnerTag, dontFragment: Bool?) throws(SystemCallError) -> SocketID {
        let id = newID()
        sockets[id] = Socket(owner: owner, local: socket.localEndpoint, adopted: socket, dontFragment: dontFragment)
        return id
    }

    func openStreamListener(binding address: Endpoint, freeBind: Bool, owner: OwnerTag) throws(SystemCallError) {
        sockets[newID()] = Socket(owner: owner, local: address, adopted: nil, dontFragment: nil)
    }

    func setOwner(_ socket: SocketID, _ owner: OwnerTag) { sockets[socket]?.owner = owner }

    func disown(_ socket: SocketID) { sockets[socket]?.owner = .unowned }

    func unregister(_ ids: [SocketID]) {
        for id in ids { sockets[id] = nil }
    }

    func enqueue(socket: SocketID, to destination: Endpoint, from source: Endpoint, trafficClass: TrafficClass,
                 bytes: UnsafeRawBufferPointer) {
        queued.append(Datagram(socket: socket, destination: destination, source: source, trafficClass: trafficClass,
                               bytes: Array(bytes)))
    }

    func flush() {
        sent += queued
        queued.removeAll()
        flushes += 1
    }

    /// The stream `id`, made on first use.
    func stream(_ id: SocketID) -> Stream {
        if let stream = streams[id] { return stream }
        let stream = Stream()
        streams[id] = stream
        return stream
    }

    func input(_ stream: SocketID) -> UnsafeRawBufferPointer { self.stream(stream).input }

    func consume(_ stream: SocketID, _ count: Int) { self.stream(stream).consume(count) }

    func write(_ stream: SocketID, _ bytes: UnsafeRawBufferPointer, pendingAtMost: Int) -> Bool {
        let target = self.stream(stream)
        guard !target.closed, target.output.count + bytes.count <= pendingAtMost else { return false }
        target.output += bytes
        return true
    }

    func outputPending(_ stream: SocketID) -> Int { self.stream(stream).output.count }

    /// Nothing to wait for: the test reads `output` (and empties it) itself.
    func notifyWritable(_ stream: SocketID, pendingAtMost: Int) {}

    func setDeadline(_ stream: SocketID, _ nanoseconds: UInt64?) { self.stream(stream).deadline = nanoseconds }

    func close(_ stream: SocketID, keepingOutput: Bool) { self.stream(stream).closed = true }
}
