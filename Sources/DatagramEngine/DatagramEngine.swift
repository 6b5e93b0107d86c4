import Glibc
import CURing
import NetAddress
import SystemSupport

/// Moves UDP datagrams in batches, and the bytes of TCP streams, for one thread. One API over
/// three backends chosen at run time (see `Backend`); the relay's workers each own one engine
/// and use it from their own thread only (io_uring's SINGLE_ISSUER needs it: create the engine
/// on that thread).
///
/// A turn is: `receive` (what is ready now, up to `batchSize`, never waiting to fill a batch),
/// read `received(i)` and `streamEvent(i)`, `enqueue` replies or forwards that borrow the
/// received bytes, `write` to streams (copied), `flush`. Every datagram carries its TOS byte
/// both ways, and on a socket bound to a wildcard address the local address it reached and is
/// sent from. Nothing here allocates per datagram.
///
/// Streams (with `EngineConfiguration.streamLimit` > 0): `listen` registers a listener; each
/// connection it accepts becomes a stream, reported `accepted` with the listener's tag. The
/// owner names itself (`setOwner`), reads the contiguous `input` and `consume`s what it used
/// (a framer may leave a partial message), `write`s whole messages or has them refused past
/// the high water mark, and `close`s. Every stream ends with one `closed` event. Each has an
/// input buffer and an output ring of fixed size, set up at accept (`StreamBuffers`).
public final class DatagramEngine {
    /// The backend doing the work, one type each; every call is one switch over this.
    private enum Driver {
        case poll(PollBackend)
        case ring(RingBackend)
    }

    public let backend: Backend
    /// Why this backend: the choice asked for, or why auto chose it. Never silent.
    public let backendReason: String
    public let configuration: EngineConfiguration
    /// Wakes this engine's `receive` from another thread.
    public let waker: EngineWaker

    @usableFromInline let state: EngineState
    private let driver: Driver
    /// Datagrams queued by `enqueue` for the next flush; their bytes are borrowed. (The queue
    /// is @usableFromInline for `enqueue` only: it stays this object's, never handed out.)
    @usableFromInline let outgoing: UnsafeMutablePointer<OutgoingDatagram>
    @usableFromInline let sendCapacity: Int
    @usableFromInline @exclusivity(unchecked) var outgoingCount = 0

    public init(configuration: EngineConfiguration = EngineConfiguration()) throws(SystemCallError) {
        precondition(configuration.batchSize > 0 && configuration.sendCapacity > 0)
        let wakeDescriptor = Int32(try SystemCall.require("eventfd") { Int(mr_eventfd_nonblocking()) })
        let waker = EngineWaker(descriptor: wakeDescriptor)
        let state: EngineState
        do throws(SystemCallError) {
            state = try EngineState(configuration: configuration)
        } catch {
            SystemCall.close(wakeDescriptor)
            throw error
        }
        do throws(SystemCallError) {
            (backend, backendReason, driver) = try DatagramEngine.start(state, waker: waker)
        } catch {
            SystemCall.close(wakeDescriptor)
            throw error
        }
        self.configuration = configuration
        self.waker = waker
        self.state = state
        outgoing = .allocate(capacity: configuration.sendCapacity)
        sendCapacity = configuration.sendCapacity
    }

    /// Builds the backend asked for; for auto, io_uring when the kernel allows it, else mmsg.
    private static func start(_ state: EngineState, waker: EngineWaker) throws(SystemCallError) -> (Backend, String, Driver) {
        switch state.configuration.backend {
        case .perPacket?:
            return (.perPacket, "asked for perpacket", .poll(try PollBackend(state: state, batched: false, waker: waker)))
        case .mmsg?:
            return (.mmsg, "asked for mmsg", .poll(try PollBackend(state: state, batched: true, waker: waker)))
        case .uring?:
            return (.uring, "asked for uring", .ring(try RingBackend(state: state, waker: waker)))
        case nil:
            do throws(SystemCallError) {
                return (.uring, "auto: io_uring is available", .ring(try RingBackend(state: state, waker: waker)))
            } catch {
                let reason = "auto: io_uring refused (\(error)); \(Ring.refusalAdvice(error.errno))"
                return (.mmsg, reason, .poll(try PollBackend(state: state, batched: true, waker: waker)))
            }
        }
    }

    deinit {
        outgoing.deallocate()
        // The backend goes with this object; a ring's pending read of the eventfd holds its own
        // reference to the file, so closing the descriptor first is safe.
        SystemCall.close(waker.descriptor)
    }

    /// What the engine has done so far (plain integers, owned by this thread). Inlinable, so
    /// that a caller reading a few of them every turn loads those, not a copy of all of them.
    @inlinable
    public var counters: EngineCounters { state.counters }
    /// The latest datagram dropped as longer than `maxDatagramSize`, if any.
    public var lastTruncated: TruncatedDatagram? { state.lastTruncated }
    /// Datagrams the last `receive` returned.
    public var receivedCount: Int { state.receivedCount }
    /// Whether the last `receive` returned because `waker` was used.
    public var wasWoken: Bool { state.wasWoken }

    /// Starts receiving on `socket`, whose datagrams carry `owner`; the engine keeps it open
    /// until `unregister`.
    public func register(_ socket: UDPSocket, owner: OwnerTag = .unowned) throws(SystemCallError) -> SocketID {
        let id = state.table.add(socket, owner: owner, gso: state.gsoActive, gro: state.groActive,
                                 timestamps: configuration.receiveTimestamps)
        switch driver {
        case .poll(let poll): try addToPoller(poll, id, descriptor: socket.descriptor)
        case .ring(let ring):
            ring.register(id, descriptor: socket.descriptor)
        }
        return id
    }

    /// Starts accepting on `listener`, whose `accepted` events carry `owner`; the engine keeps
    /// it open until `unregister`. Refused when streams are off (`streamLimit` is 0).
    public func listen(_ listener: TCPListener, owner: OwnerTag = .unowned) throws(SystemCallError) -> SocketID {
        guard state.streams != nil else {
            throw SystemCallError("cannot accept on TCP", errno: EINVAL, address: listener.localEndpoint,
                                  advice: "streams are off in this engine: set EngineConfiguration.streamLimit")
        }
        let id = state.table.add(listener, owner: owner)
        switch driver {
        case .poll(let poll): try addToPoller(poll, id, descriptor: listener.descriptor)
        case .ring(let ring):
            ring.register(listener: id, descriptor: listener.descriptor)
        }
        return id
    }

    /// Adds a registered socket to the epoll set; when epoll refuses, its slot is given back,
    /// so no socket stays half registered.
    private func addToPoller(_ poll: PollBackend, _ id: SocketID, descriptor: Int32) throws(SystemCallError) {
        do throws(SystemCallError) {
            try poll.register(id, descriptor: descriptor)
        } catch {
            state.table.release(Int(id.slot))
            throw error
        }
    }

    /// Names the owner of `id`'s datagrams or stream events from now on, for a table that
    /// knows its entry only once the socket is open (a stream: when it takes the `accepted`
    /// event). Nothing happens for a socket that is gone.
    public func setOwner(_ id: SocketID, _ owner: OwnerTag) {
        guard let slot = state.table.lookup(id) else { return }
        state.table[slot].owner = owner
    }

    /// Takes `id` from its owner at once: its datagrams and stream events (a listener's
    /// `accepted` ones too), this turn's included, carry `unowned` from now on, while the
    /// socket stays open for sends already queued (close it with `unregister` after the
    /// flush). A table calls it when it forgets the socket's entry.
    public func disown(_ id: SocketID) {
        setOwner(id, .unowned)
        state.disown(id)
    }

    /// Stops receiving on the socket and closes it (for io_uring once its receive has ended).
    public func unregister(_ id: SocketID) { unregister([id]) }

    /// Stops receiving on these sockets and closes them, disowning them first (`disown`). With
    /// io_uring all the cancellations go to the kernel together and are awaited together, so
    /// closing many sockets at once (a wave of expired sessions) costs a few system calls, not
    /// a few per socket.
    /// A stream among them is closed as by `close(_:keepingOutput: false)`, and disowned, so
    /// its `closed` event goes to nobody.
    public func unregister(_ ids: [SocketID]) {
        for id in ids { state.disown(id) }
        var sockets = ids
        if let streams = state.streams {
            // A stream is released by its table after its last operation, never here.
            sockets.removeAll { id in
                guard let index = streams.index(of: id) else { return false }
                setOwner(id, .unowned)
                if streams[index].phase == .open { streams.close(index, keepingOutput: false) }
                return true
            }
        }
        switch driver {
        case .poll(let poll): poll.unregister(sockets)
        case .ring(let ring): ring.unregister(sockets)
        }
    }

    /// Whether GSO is on for this socket now (off after the kernel refused it once).
    public func gsoEnabled(_ id: SocketID) -> Bool {
        guard let slot = state.table.lookup(id) else { return false }
        return state.table[slot].gsoEnabled
    }

    /// Whether the kernel coalesces bursts for this socket (UDP_GRO taken at registration).
    public func groEnabled(_ id: SocketID) -> Bool {
        guard let slot = state.table.lookup(id) else { return false }
        return state.table[slot].groEnabled
    }

    /// The number of sockets registered and receiving, streams and listeners included (a
    /// stream until its release, the turn after its `closed` event).
    public var socketCount: Int { state.table.activeCount }

    /// Streams open now, or closed and not yet released.
    public var streamCount: Int { state.streams?.count ?? 0 }

    // MARK: streams

    /// Stream events of the last `receive`, `0 ..< streamEventCount` (see `StreamEvent`).
    public var streamEventCount: Int { state.streamEvents.count }

    public func streamEvent(_ index: Int) -> StreamEvent { state.streamEvents[index] }

    /// The bytes `stream` has received and the owner has not consumed, contiguous. They stay
    /// valid and in place until the owner's next `consume` of this stream or the next
    /// `receive`; empty for a stream that is gone.
    public func input(_ stream: SocketID) -> UnsafeRawBufferPointer {
        guard let streams = state.streams, let index = streams.index(of: stream) else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return streams.input(index)
    }

    /// The owner is done with the first `count` bytes of `input(stream)` (at most its count).
    /// Input left there stays for the next call; an input that stays full stops the reading.
    public func consume(_ stream: SocketID, _ count: Int) {
        guard let streams = state.streams, let index = streams.index(of: stream) else { return }
        streams.consume(index, count)
    }

    /// Copies `bytes` into `stream`'s output, whole, to be sent from the next `flush` on, in
    /// order after what was written before. Returns false, taking nothing, when that would
    /// leave more than the high water mark pending, or more than `pendingAtMost` (an owner's
    /// lower bound for some of its messages), or the stream is closing: the caller drops the
    /// message and counts it, and may wait for a `writable` event. `bytes` are the caller's
    /// again as soon as this returns.
    public func write(_ stream: SocketID, _ bytes: UnsafeRawBufferPointer, pendingAtMost: Int = .max) -> Bool {
        guard let streams = state.streams, let index = streams.index(of: stream) else { return false }
        return streams.write(index, bytes, limit: min(pendingAtMost, configuration.streamHighWater))
    }

    /// Asks for a `writable` event on `stream` once at most `pendingAtMost` bytes of its
    /// output are pending (in the next turn's events when that is so already): for an owner
    /// that stops reading a stream's input until it has room for an answer. (A refused `write`
    /// asks for one below the low water mark by itself.)
    public func notifyWritable(_ stream: SocketID, pendingAtMost: Int) {
        guard let streams = state.streams, let index = streams.index(of: stream) else { return }
        streams.notifyWritable(index, pendingAtMost: pendingAtMost)
    }

    /// Bytes written to `stream` and not yet taken by the kernel.
    public func outputPending(_ stream: SocketID) -> Int {
        guard let streams = state.streams, let index = streams.index(of: stream) else { return 0 }
        return Int(streams[index].cursors.outputCount)
    }

    /// Closes `stream`. Keeping its output (the default), the engine stops reading and sends
    /// what is pending first, then closes: within the stream's deadline, or the linger time
    /// when it has none, else the close reports `timeout`. Not keeping it, the stream closes at
    /// the next turn and its pending output is dropped. Either way `closed(.byOwner)` follows in
    /// a later turn, and only then is the stream's entry free; writes are refused meanwhile.
    /// Closing a stream that is closing already (by its owner, its peer or its deadline) does
    /// nothing: the first end stands.
    public func close(_ stream: SocketID, keepingOutput: Bool = true) {
        guard let streams = state.streams, let index = streams.index(of: stream), streams[index].phase == .open else { return }
        streams.close(index, keepingOutput: keepingOutput)
    }

    /// Sets `stream`'s deadline, in nanoseconds of `MonotonicClock` (nil for none). When it
    /// passes, the engine closes the stream and reports `closed(.timeout)`; an owner that wants
    /// an idle timeout moves it forward on each `data` event. Checked once per turn, and a
    /// turn's wait ends by the nearest deadline. A stream that is closing already has none.
    public func setDeadline(_ stream: SocketID, _ nanoseconds: UInt64?) {
        guard let streams = state.streams, let index = streams.index(of: stream) else { return }
        streams.setDeadline(index, nanoseconds ?? .max)
    }

    /// The `index`th datagram of the last receive, `0 ..< receivedCount`.
    /// (@inlinable, like `enqueue`: called per datagram from the relay's module, where a call
    /// that cannot be inlined costs as much as the work it does.)
    @inlinable
    public func received(_ index: Int) -> ReceivedDatagram { state.received(index) }

    /// Takes what is ready now, up to `batchSize` datagrams; waits up to `timeoutMilliseconds`
    /// only when nothing is ready. Returns the number received (0 on timeout or wake-up).
    @discardableResult
    public func receive(timeoutMilliseconds: Int32) -> Int {
        state.beginTurn()
        switch driver {
        case .poll(let poll): poll.receive(timeoutMilliseconds: timeoutMilliseconds)
        case .ring(let ring): ring.receive(timeoutMilliseconds: timeoutMilliseconds)
        }
        state.counters.noteTurn(state.receivedCount)
        return state.receivedCount
    }

    /// Queues one datagram; flushes first when the queue is full. `bytes` must stay valid
    /// until the flush (received bytes stay valid until the next `receive`). `source`, for a
    /// socket bound to a wildcard address, is the local address the datagram leaves from (an
    /// answer's: the `localAddress` of what it answers), sent as an IP_PKTINFO or IPV6_PKTINFO
    /// control message beside the TOS byte; the wildcard (the default) lets the kernel's routing
    /// choose, and a socket bound to one address sends from that one whatever this says.
    @inlinable
    public func enqueue(socket: SocketID, to destination: Endpoint, from source: Endpoint = Endpoint(high: 0, low: 0, port: 0),
                        trafficClass: TrafficClass, bytes: UnsafeRawBufferPointer) {
        if outgoingCount == sendCapacity { flush() }
        outgoing[outgoingCount] = OutgoingDatagram(socket: socket, destination: destination, source: source, trafficClass: trafficClass,
                                                   bytes: bytes)
        outgoingCount += 1
    }

    /// Sends everything queued: one sendmsg each (perPacket), one sendmmsg per run of one
    /// socket (mmsg), or one submit for all (uring). Returns when the kernel has taken the
    /// datagrams. Streams' new output starts going out too (epoll: sent now as far as the
    /// socket takes it; io_uring: one send per stream submitted with the datagrams), and the
    /// rest follows as the peers make room, without this call waiting for it.
    public func flush() {
        if state.streams != nil { flushStreams() }
        guard outgoingCount > 0 else { return }
        state.sendVectors.build(outgoing, count: outgoingCount, table: state.table, gso: state.gsoActive) { code, segments in
            state.counters.sendErrors.add(code, UInt64(segments))
        }
        outgoingCount = 0
        switch driver {
        case .poll(let poll): poll.send()
        case .ring(let ring): ring.send()
        }
    }

    /// The streams' part of a flush, before the datagrams' (io_uring: so that one submit takes
    /// both; `submitPending` when there are no datagrams).
    private func flushStreams() {
        switch driver {
        case .poll(let poll): poll.flushStreams()
        case .ring(let ring):
            ring.flushStreams()
            if outgoingCount == 0 { ring.submitPending() }
        }
    }
}
