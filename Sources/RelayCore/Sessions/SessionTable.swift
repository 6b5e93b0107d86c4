import DatagramEngine
import SystemSupport
import Glibc

/// Sessions: legs that latch onto the first source that sends to them, and forward to every
/// other latched leg of their session.
extension Worker {
    @inline(__always)
    func fromLeg(_ leg: Int, _ datagram: ReceivedDatagram) {
        if legs[leg].latched != datagram.source {
            guard latch(leg, datagram.source) else { return }
        }
        legs[leg].lastHeard = now
        if legs[leg].rateLimit > 0 && !takeToken(leg) {
            legs[leg].counters.drops.add(.rateLimit)
            drops.add(.rateLimit)
            return
        }
        let marking = legs[leg].policy.apply(datagram.trafficClass)
        legs[leg].counters.packetsIn &+= 1
        legs[leg].counters.bytesIn &+= UInt64(datagram.bytes.count)
        legs[leg].counters.ecnIn[Int(datagram.trafficClass.ecn.rawValue)] &+= 1
        let first = Int(legs[leg].firstLeg)
        var forwarded = false
        for other in first..<(first + Int(legs[leg].legCount)) where other != leg {
            guard let peer = legs[other].latched else { continue }
            engine.enqueue(socket: legs[other].socket, to: peer, trafficClass: marking, bytes: datagram.bytes)
            legs[other].counters.packetsOut &+= 1
            legs[other].counters.bytesOut &+= UInt64(datagram.bytes.count)
            legs[other].counters.ecnOut[Int(marking.ecn.rawValue)] &+= 1
            forwarded = true
        }
        if !forwarded {
            legs[leg].counters.drops.add(.noDestination)
            drops.add(.noDestination)
        }
    }

    /// Latches `leg` onto `source` when allowed: the leg is new, or silent for longer than
    /// relatch_after and the session's relatch policy accepts the source (by default only one
    /// with the latched peer's address: a NAT rebinding, not a stranger after a receive-only
    /// leg's media). Refused: a source outside allowed_sources, a second source while the first
    /// is still talking or that the policy refuses (hijack), and a source already latched on
    /// another leg of the session (which would make the relay send a peer its own datagrams).
    func latch(_ leg: Int, _ source: Endpoint) -> Bool {
        if let latched = legs[leg].latched,
           now &- legs[leg].lastHeard < legs[leg].relatchAfter || !legs[leg].relatch.allows(from: latched, to: source) {
            return refuse(leg, .hijack)
        }
        if isRelayOwn(source) { return refuse(leg, .sourceNotAllowed) }
        let session = sessions[Int(legs[leg].session)]!
        if !session.request.allowedSources.isEmpty && !session.request.allowedSources.contains(where: { $0.contains(source) }) {
            return refuse(leg, .sourceNotAllowed)
        }
        let first = Int(legs[leg].firstLeg)
        for other in first..<(first + Int(legs[leg].legCount)) where other != leg && legs[other].latched == source {
            return refuse(leg, .hijack)
        }
        if legs[leg].latched != nil { legs[leg].counters.relatches &+= 1 }
        legs[leg].latched = source
        return true
    }

    /// A source that is one of this relay's own sockets (a spoofed datagram naming another
    /// leg's address): latching onto it would make two legs forward to each other forever.
    /// Checked only when a leg latches, never per datagram.
    func isRelayOwn(_ source: Endpoint) -> Bool {
        var ownAddress = source.isLoopback || source == Endpoint(high: settings.advertiseAddress.high, low: settings.advertiseAddress.low,
                                                                port: source.port, scope: source.scope)
        if !settings.relayAddress.isWildcard {
            ownAddress = ownAddress || (source.high == settings.relayAddress.high && source.low == settings.relayAddress.low)
        }
        return ownAddress && settings.ports.isHeld(source.port)
    }

    private func refuse(_ leg: Int, _ reason: DropReason) -> Bool {
        legs[leg].counters.drops.add(reason)
        drops.add(reason)
        return false
    }

    /// Token bucket in nano-tokens: a second's worth of burst at most.
    private func takeToken(_ leg: Int) -> Bool {
        let rate = legs[leg].rateLimit
        let elapsed = min(now &- legs[leg].lastRefill, 1_000_000_000)
        legs[leg].tokens = min(legs[leg].tokens &+ elapsed &* rate, rate &* 1_000_000_000)
        legs[leg].lastRefill = now
        guard legs[leg].tokens >= 1_000_000_000 else { return false }
        legs[leg].tokens &-= 1_000_000_000
        return true
    }

    // MARK: control commands

    func execute(_ command: WorkerCommand) {
        switch command {
        case .create(let request, let id, let reply): reply(createSession(request, id: id))
        case .delete(let id, let reply):
            guard let index = sessionsByID[id], let session = sessions[Int(index)] else { return reply(false) }
            removeSession(index, session)
            lifecycle.sessionsDeleted &+= 1
            reply(true)
        case .describe(let id, let reply):
            reply(sessionsByID[id].flatMap { describe($0) })
        case .list(let reply):
            reply(sessionsByID.values.compactMap { describe($0) })
        case .turnAllocations(let limit, let reply):
            reply(turnTable?.describeAllocations(limit: limit, worker: shared.index) ?? [])
        }
    }

    func createSession(_ request: SessionRequest, id: String) -> Result<SessionInfo, RelayError> {
        let count = request.legs
        let slots = count * request.rtcp.portsPerLeg
        let first: Int32 = freeLegBlocks[slots].popLast() ?? Int32(legs.count)
        let sessionIndex: Int32 = freeSessions.popLast() ?? Int32(sessions.count)
        var rtp: [(SocketID, UInt16)] = []
        var companions: [(SocketID, UInt16)] = []
        func undo() {
            engine.unregister((rtp + companions).map(\.0))
            for (_, port) in rtp + companions { settings.ports.release(port) }
            if first < Int32(legs.count) { freeLegBlocks[slots].append(first) }
            if sessionIndex < Int32(sessions.count) { freeSessions.append(sessionIndex) }
        }
        for _ in 0..<count {
            switch openPorts(near: settings.relayAddress, pair: request.rtcp == .pair) {
            case .success(let opened):
                rtp.append(opened[0])
                companions += opened.dropFirst()
            case .failure(let error):
                undo()
                return .failure(error)
            }
        }
        // The legs, then their RTCP companions, which forward among themselves only.
        let second: UInt64 = 1_000_000_000
        for (offset, (socket, port)) in (rtp + companions).enumerated() {
            var address = settings.advertiseAddress
            address.port = port
            let state = LegState(
                socket: socket, address: address, session: sessionIndex,
                firstLeg: first + (offset < count ? 0 : Int32(count)), legCount: Int32(count),
                policy: request.policy, relatchAfter: UInt64(request.relatchAfterSeconds) * second, relatch: request.relatch,
                rateLimit: UInt64(request.maxPacketsPerSecond), tokens: UInt64(request.maxPacketsPerSecond) * second,
                lastRefill: now)
            let index = Int(first) + offset
            if index < legs.count { legs[index] = state } else { legs.append(state) }
            setRole(socket, .leg(Int32(index)))
        }
        let session = SessionState(id: id, request: request, firstLeg: first, created: now,
                                   idleTimeout: UInt64(request.idleTimeoutSeconds) * second)
        if Int(sessionIndex) < sessions.count { sessions[Int(sessionIndex)] = session } else { sessions.append(session) }
        sessionsByID[id] = sessionIndex
        lifecycle.sessionsCreated &+= 1
        return .success(describe(sessionIndex)!)
    }

    /// Binds a socket on a port from the relay's range, or with `pair` two: an even port and the
    /// odd one after it. A port some other process holds is skipped (and returned to the pool
    /// later), a few times before giving up.
    func openPorts(near address: Endpoint, for purpose: PortPool.Purpose = .session, pair: Bool = false)
        -> Result<[(SocketID, UInt16)], RelayError> {
        var skipped: [UInt16] = []
        defer { for port in skipped { settings.ports.release(port, from: purpose) } }
        for _ in 0..<16 {
            guard let base = pair ? settings.ports.acquirePair() : settings.ports.acquire(for: purpose) else {
                return .failure(.portsExhausted)
            }
            let ports = pair ? [base, base + 1] : [base]
            var opened: [(SocketID, UInt16)] = []
            do throws(SystemCallError) {
                for port in ports {
                    var local = address
                    local.port = port
                    let socket = try UDPSocket(binding: local, options: settings.socketOptions)
                    opened.append((try engine.register(socket), port))
                }
                return .success(opened)
            } catch {
                engine.unregister(opened.map(\.0))
                guard error.errno == EADDRINUSE else {
                    for port in ports { settings.ports.release(port, from: purpose) }
                    return .failure(.socket("\(error)"))
                }
                skipped += ports
            }
        }
        return .failure(.portsExhausted)
    }

    func describe(_ index: Int32) -> SessionInfo? {
        guard let session = sessions[Int(index)] else { return nil }
        let first = Int(session.firstLeg)
        let count = session.request.legs
        let legInfo = (first..<(first + count)).map { leg in
            var info = LegInfo(address: legs[leg].address, latched: legs[leg].latched, counters: legs[leg].counters)
            if session.request.rtcp == .pair {
                let companion = legs[leg + count]
                info.rtcp = RTCPCompanionInfo(address: companion.address, latched: companion.latched, counters: companion.counters)
            }
            return info
        }
        let lastHeard = (first..<(first + session.slotCount)).map { legs[$0].lastHeard }.max() ?? 0
        return SessionInfo(id: session.id, worker: shared.index, request: session.request, legs: legInfo,
                           ageSeconds: Double(now &- session.created) / 1e9,
                           idleSeconds: Double(now &- max(lastHeard, session.created)) / 1e9)
    }

    func removeSession(_ index: Int32, _ session: SessionState) {
        var closing: [SocketID] = []
        forgetSession(index, session, closing: &closing)
        engine.unregister(closing)
        releasePorts(of: session)
    }

    /// Takes a session out of the tables and adds its sockets to `closing`; the caller closes
    /// them (all at once) and then calls `releasePorts`, so no port is handed out while its
    /// socket is still open.
    func forgetSession(_ index: Int32, _ session: SessionState, closing: inout [SocketID]) {
        let first = Int(session.firstLeg)
        for leg in first..<(first + session.slotCount) {
            setRole(legs[leg].socket, .none)
            closing.append(legs[leg].socket)
            legs[leg].latched = nil
        }
        freeLegBlocks[session.slotCount].append(session.firstLeg)
        sessions[Int(index)] = nil
        freeSessions.append(index)
        sessionsByID[session.id] = nil
    }

    func releasePorts(of session: SessionState) {
        let first = Int(session.firstLeg)
        for leg in first..<(first + session.slotCount) { settings.ports.release(legs[leg].address.port) }
    }

    /// Closes every session idle past its timeout, all their sockets in one go.
    func expireSessions() {
        var closing: [SocketID] = []
        var expired: [SessionState] = []
        for index in sessions.indices {
            guard let session = sessions[index] else { continue }
            let first = Int(session.firstLeg)
            var last = session.created
            for leg in first..<(first + session.slotCount) { last = max(last, legs[leg].lastHeard) }
            if now &- last > session.idleTimeout {
                forgetSession(Int32(index), session, closing: &closing)
                expired.append(session)
                lifecycle.sessionsExpired &+= 1
            }
        }
        guard !closing.isEmpty else { return }
        engine.unregister(closing)
        for session in expired { releasePorts(of: session) }
    }
}
