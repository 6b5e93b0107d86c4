import Glibc
import CURing
import NetAddress
import SystemSupport

/// Moves UDP datagrams in batches for one thread. One API over three backends chosen at run
/// time (see `Backend`); the relay's workers each own one engine and use it from their own
/// thread only (io_uring's SINGLE_ISSUER needs it: create the engine on that thread).
///
/// A turn is: `receive` (what is ready now, up to `batchSize`, never waiting to fill a batch),
/// read `received(i)`, `enqueue` replies or forwards that borrow the received bytes, `flush`.
/// Every datagram carries its TOS byte both ways. Nothing here allocates per datagram.
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
    /// Per datagram, on the engine's thread only: no dynamic exclusivity check (see EngineState).
    @usableFromInline @exclusivity(unchecked) var outgoingCount = 0

    public init(configuration: EngineConfiguration = EngineConfiguration()) throws(SystemCallError) {
        precondition(configuration.batchSize > 0 && configuration.sendCapacity > 0)
        let wakeDescriptor = Int32(try SystemCall.require("eventfd") { Int(mr_eventfd_nonblocking()) })
        let waker = EngineWaker(descriptor: wakeDescriptor)
        let state = EngineState(configuration: configuration)
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
        let id = state.table.add(socket, owner: owner, gso: state.gsoActive, gro: state.groActive)
        switch driver {
        case .poll(let poll):
            do throws(SystemCallError) {
                try poll.register(id, descriptor: socket.descriptor)
            } catch {
                state.table.release(Int(id.slot))
                throw error
            }
        case .ring(let ring):
            ring.register(id, descriptor: socket.descriptor)
        }
        return id
    }

    /// Names the owner of `id`'s datagrams from now on, for a table that knows its entry only
    /// once the socket is open. Nothing happens for a socket that is gone.
    public func setOwner(_ id: SocketID, _ owner: OwnerTag) {
        guard let slot = state.table.lookup(id) else { return }
        state.table[slot].owner = owner
    }

    /// Takes `id` from its owner at once: its datagrams, this turn's included, carry `unowned`
    /// from now on, while the socket stays open for sends already queued (close it with
    /// `unregister` after the flush). A table calls it when it forgets the socket's entry.
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
    public func unregister(_ ids: [SocketID]) {
        for id in ids { state.disown(id) }
        switch driver {
        case .poll(let poll): poll.unregister(ids)
        case .ring(let ring): ring.unregister(ids)
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

    /// The number of sockets registered and receiving.
    public var socketCount: Int { state.table.activeCount }

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
        return state.receivedCount
    }

    /// Queues one datagram; flushes first when the queue is full. `bytes` must stay valid
    /// until the flush (received bytes stay valid until the next `receive`).
    @inlinable
    public func enqueue(socket: SocketID, to destination: Endpoint, trafficClass: TrafficClass, bytes: UnsafeRawBufferPointer) {
        if outgoingCount == sendCapacity { flush() }
        outgoing[outgoingCount] = OutgoingDatagram(socket: socket, destination: destination, trafficClass: trafficClass, bytes: bytes)
        outgoingCount += 1
    }

    /// Sends everything queued: one sendmsg each (perPacket), one sendmmsg per run of one
    /// socket (mmsg), or one submit for all (uring). Returns when the kernel has taken them.
    public func flush() {
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
}
