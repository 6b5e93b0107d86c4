import Glibc
import CURing

/// Moves UDP datagrams in batches for one thread. One API over three backends chosen at run
/// time (see `Backend`); the relay's workers each own one engine and use it from their own
/// thread only (io_uring's SINGLE_ISSUER needs it: create the engine on that thread).
///
/// A turn is: `receive` (what is ready now, up to `batchSize`, never waiting to fill a batch),
/// read `received(i)`, `enqueue` replies or forwards that borrow the received bytes, `flush`.
/// Every datagram carries its TOS byte both ways. Nothing here allocates per datagram.
public final class DatagramEngine {
    public let backend: Backend
    /// Why this backend: the choice asked for, or why `auto` chose it. Never silent.
    public let backendReason: String
    public let configuration: EngineConfiguration
    public internal(set) var counters = EngineCounters()
    /// Datagrams the last `receive` returned.
    public internal(set) var receivedCount = 0
    /// The latest datagram dropped for being longer than `maxDatagramSize`, if any: two plain
    /// stores on a path that drops the datagram anyway.
    public internal(set) var lastTruncated: TruncatedDatagram?
    /// Whether the last `receive` returned because `waker` was used.
    public internal(set) var wasWoken = false
    /// Wakes this engine's `receive` from another thread.
    public let waker: EngineWaker

    let table = SocketTable()
    let received: UnsafeMutablePointer<ReceivedDatagram>
    let outgoing: UnsafeMutablePointer<OutgoingDatagram>
    var outgoingCount = 0
    let sendVectors: SendVectors
    let receiveVectors: ReceiveVectors?
    let poller: EventPoller?
    let ring: URingDriver?
    var receiveVectorsUsed = 0

    public init(configuration: EngineConfiguration = EngineConfiguration()) throws(SystemCallError) {
        precondition(configuration.batchSize > 0 && configuration.sendCapacity > 0)
        self.configuration = configuration
        let wakeDescriptor = mr_eventfd_nonblocking()
        guard wakeDescriptor >= 0 else { throw SystemCallError("eventfd", errno: errno) }
        waker = EngineWaker(descriptor: wakeDescriptor)

        var chosen: Backend
        var reason: String
        var ring: URingDriver?
        switch configuration.backend {
        case .perPacket: (chosen, reason) = (.perPacket, "asked for perpacket")
        case .mmsg: (chosen, reason) = (.mmsg, "asked for mmsg")
        case .uring:
            do throws(SystemCallError) {
                ring = try URingDriver(configuration: configuration, wakeDescriptor: wakeDescriptor)
            } catch {
                close(wakeDescriptor)
                throw error
            }
            (chosen, reason) = (.uring, "asked for uring")
        case .auto:
            do throws(SystemCallError) {
                ring = try URingDriver(configuration: configuration, wakeDescriptor: wakeDescriptor)
                (chosen, reason) = (.uring, "auto: io_uring is available")
            } catch {
                (chosen, reason) = (.mmsg, "auto: io_uring refused (\(error)); \(URingDriver.refusalAdvice(error.errno))")
            }
        }
        backend = chosen
        backendReason = reason
        self.ring = ring
        received = .allocate(capacity: configuration.batchSize)
        outgoing = .allocate(capacity: configuration.sendCapacity)
        sendVectors = SendVectors(capacity: configuration.sendCapacity)
        if chosen == .uring {
            receiveVectors = nil
            poller = nil
        } else {
            receiveVectors = ReceiveVectors(capacity: configuration.batchSize, payloadSize: configuration.maxDatagramSize)
            do throws(SystemCallError) {
                let poller = try EventPoller(capacity: max(64, configuration.batchSize))
                try poller.add(wakeDescriptor, tag: EventPoller.wakeTag)
                self.poller = poller
            } catch {
                close(wakeDescriptor)
                throw error
            }
        }
    }

    deinit {
        // The ring goes first so that no receive is still pointing into memory freed below.
        ring?.shutDown()
        received.deallocate()
        outgoing.deallocate()
        close(waker.descriptor)
    }

    /// Whether GSO may merge sends on this engine: asked for, and a batched backend.
    var gsoActive: Bool { configuration.gso && backend != .perPacket }

    /// Starts receiving on `socket`; the engine keeps it open until `unregister`.
    public func register(_ socket: UDPSocket) throws(SystemCallError) -> SocketID {
        let id = table.add(socket, gso: gsoActive)
        if let ring {
            ring.arm(slot: Int(id.slot), generation: id.generation, descriptor: socket.descriptor)
        } else if let poller {
            do throws(SystemCallError) {
                try poller.add(socket.descriptor, tag: UInt64(id.generation) << 32 | UInt64(UInt32(id.slot)))
            } catch {
                table.release(Int(id.slot))
                throw error
            }
        }
        return id
    }

    /// Stops receiving on the socket and closes it (for io_uring once its receive has ended).
    public func unregister(_ id: SocketID) { unregister([id]) }

    /// Stops receiving on these sockets and closes them. With io_uring all the cancellations go
    /// to the kernel together and are awaited together, so closing many sockets at once (a
    /// wave of expired sessions) costs a few system calls, not a few per socket.
    public func unregister(_ ids: [SocketID]) {
        var waiting: [(slot: Int, generation: UInt32)] = []
        for id in ids {
            guard let slot = table.lookup(id) else { continue }
            if let ring {
                table.deactivate(slot)
                if ring.cancel(slot: slot, generation: id.generation) {
                    waiting.append((slot, id.generation))
                } else {
                    table.release(slot)
                }
            } else {
                poller?.remove(table[slot].descriptor)
                table.release(slot)
            }
        }
        if let ring, !waiting.isEmpty { finishCancellations(waiting, ring: ring) }
    }

    /// Whether GSO is on for this socket now (off after the kernel refused it once).
    public func gsoEnabled(_ id: SocketID) -> Bool {
        guard let slot = table.lookup(id) else { return false }
        return table[slot].gsoEnabled
    }

    /// Test and diagnostics hook: turns GSO off or on for one socket, as a refusal would.
    public func setGSO(_ enabled: Bool, for id: SocketID) {
        guard let slot = table.lookup(id) else { return }
        table[slot].gsoEnabled = enabled && gsoActive
    }

    /// The number of sockets registered and receiving.
    public var socketCount: Int { table.activeCount }

    /// The `index`th datagram of the last receive, `0 ..< receivedCount`.
    @inline(__always)
    public func received(_ index: Int) -> ReceivedDatagram { received[index] }

    /// Takes what is ready now, up to `batchSize` datagrams; waits up to `timeoutMilliseconds`
    /// only when nothing is ready. Returns the number received (0 on timeout or wake-up).
    @discardableResult
    public func receive(timeoutMilliseconds: Int32) -> Int {
        receivedCount = 0
        wasWoken = false
        if ring != nil {
            receiveWithRing(timeoutMilliseconds: timeoutMilliseconds)
        } else {
            receiveWithPoller(timeoutMilliseconds: timeoutMilliseconds)
        }
        return receivedCount
    }

    /// Queues one datagram; flushes first when the queue is full. `bytes` must stay valid
    /// until the flush (received bytes stay valid until the next `receive`).
    @inline(__always)
    public func enqueue(socket: SocketID, to destination: Endpoint, trafficClass: TrafficClass, bytes: UnsafeRawBufferPointer) {
        if outgoingCount == configuration.sendCapacity { flush() }
        outgoing[outgoingCount] = OutgoingDatagram(socket: socket, destination: destination, trafficClass: trafficClass, bytes: bytes)
        outgoingCount += 1
    }

    /// Sends everything queued: one sendmsg each (perPacket), one sendmmsg per run of one
    /// socket (mmsg), or one submit for all (uring). Returns when the kernel has taken them.
    public func flush() {
        guard outgoingCount > 0 else { return }
        sendVectors.build(outgoing, count: outgoingCount, table: table, gso: gsoActive) { code, segments in
            counters.sendErrors.add(code, UInt64(segments))
        }
        outgoingCount = 0
        if ring != nil {
            sendWithRing()
        } else if backend == .mmsg {
            sendWithSendmmsg()
        } else {
            sendWithSendmsg()
        }
    }

    // MARK: accounting shared by the backends

    /// Records one received datagram whose payload, source and control bytes are in place;
    /// `size` is its real length, larger than the payload when it was truncated.
    @inline(__always)
    func accept(socket id: SocketID, slot: Int, source: Endpoint?, control: ReceiveControl,
                truncated: Bool, size: Int, payload: UnsafeRawBufferPointer) {
        if let count = control.overflowCount {
            counters.kernelDrops &+= UInt64(count &- table[slot].lastOverflow)
            table[slot].lastOverflow = count
        }
        if truncated || payload.count > configuration.maxDatagramSize {
            counters.truncated &+= 1
            lastTruncated = TruncatedDatagram(size: size, sourcePort: source?.port ?? 0)
            return
        }
        guard let source, receivedCount < configuration.batchSize else { return }
        let trafficClass = TrafficClass(rawValue: control.trafficClass)
        received[receivedCount] = ReceivedDatagram(socket: id, source: source, trafficClass: trafficClass, bytes: payload)
        receivedCount += 1
        counters.datagramsIn &+= 1
        counters.bytesIn &+= UInt64(payload.count)
        counters.ecnIn[Int(control.trafficClass & 3)] &+= 1
    }

    /// Records a message the kernel took.
    @inline(__always)
    func noteSent(_ message: SendVectors.Message) {
        let segments = UInt64(message.segments)
        counters.datagramsOut &+= segments
        counters.bytesOut &+= segments &* UInt64(message.segmentSize)
        counters.ecnOut[Int(message.trafficClass & 3)] &+= segments
        if message.segments > 1 {
            counters.gsoSegments &+= segments
            counters.gsoSends &+= 1
        }
    }

    /// Records a message the kernel refused; a refused GSO send turns GSO off for its socket and
    /// is sent again one datagram at a time, so no datagram is lost to the fallback.
    func noteFailed(_ index: Int, errno code: Int32) {
        let message = sendVectors.messages[index]
        if message.segments > 1, code == EIO || code == EINVAL {
            resendWithoutGSO(index)
        } else {
            counters.sendErrors.add(code, UInt64(message.segments))
        }
    }

    func resendWithoutGSO(_ index: Int) {
        let message = sendVectors.messages[index]
        let slot = Int(message.slot)
        table[slot].gsoEnabled = false
        counters.gsoFallbacks &+= 1
        let header = withUnsafeMutablePointer(to: &sendVectors.headers[index].msg_hdr) { $0 }
        header.pointee.msg_controllen = SendControl.write(
            into: header.pointee.msg_control, ipv4: table[slot].ipv4 || isIPv4Name(header.pointee.msg_name),
            trafficClass: message.trafficClass, segmentSize: 0)
        header.pointee.msg_iovlen = 1
        var single = message
        single.segments = 1
        for segment in 0..<Int(message.segments) {
            header.pointee.msg_iov = sendVectors.iovecs + Int(message.firstDatagram) + segment
            while true {
                counters.syscalls &+= 1
                if sendmsg(table[slot].descriptor, header, 0) >= 0 {
                    noteSent(single)
                } else if errno == EINTR {
                    continue
                } else {
                    counters.sendErrors.add(errno)
                }
                break
            }
        }
    }

    private func isIPv4Name(_ name: UnsafeMutableRawPointer?) -> Bool {
        guard let name else { return false }
        guard Int32(name.load(as: sa_family_t.self)) == AF_INET6 else { return true }
        return Endpoint(reading: name, length: socklen_t(MemoryLayout<sockaddr_in6>.size))?.isIPv4 ?? false
    }
}
