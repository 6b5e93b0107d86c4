import DatagramEngine

/// The sessions' control path: create, delete, describe and list (commands from the control
/// plane, run on the worker's thread between batches) and idle expiry (housekeeping).
extension SessionTable {
    func create(_ request: SessionRequest, id: String) -> Result<SessionInfo, RelayError> {
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
            switch opener.open(near: settings.relayAddress, pair: request.rtcp == .pair) {
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
                limits: LegLimits(packetsPerSecond: request.maxPacketsPerSecond, bytesPerSecond: request.maxBytesPerSecond, now: now),
                ecnMarking: request.ecnMarking)
            let index = Int(first) + offset
            if index < legs.count { legs[index] = state } else { legs.append(state) }
            engine.setOwner(socket, OwnerTag(.leg, Int32(index)))
        }
        let session = SessionState(id: id, request: request, firstLeg: first, created: now,
                                   idleTimeout: UInt64(request.idleTimeoutSeconds) * second)
        if Int(sessionIndex) < sessions.count { sessions[Int(sessionIndex)] = session } else { sessions.append(session) }
        sessionsByID[id] = sessionIndex
        sessionsCreated &+= 1
        return .success(describe(sessionIndex)!)
    }

    /// Deletes the session `id`; false when there is none.
    func delete(_ id: String) -> Bool {
        guard let index = sessionsByID[id], let session = sessions[Int(index)] else { return false }
        remove(index, session, .deleted)
        sessionsDeleted &+= 1
        return true
    }

    func describe(_ id: String) -> SessionInfo? {
        sessionsByID[id].flatMap { describe($0) }
    }

    func list() -> [SessionInfo] {
        sessionsByID.values.compactMap { describe($0) }
    }

    func describe(_ index: Int32) -> SessionInfo? {
        guard let session = sessions[Int(index)] else { return nil }
        let first = Int(session.firstLeg)
        let count = session.request.legs
        let legInfo = (first..<(first + count)).map { leg in
            var info = LegInfo(address: legs[leg].address, latched: legs[leg].latched, counters: countersWithKernel(leg))
            if session.request.rtcp == .pair {
                let companion = legs[leg + count]
                info.rtcp = RTCPCompanionInfo(address: companion.address, latched: companion.latched,
                                              counters: countersWithKernel(leg + count))
            }
            return info
        }
        let lastHeard = (first..<(first + session.slotCount)).map { self.lastHeard($0) }.max() ?? 0
        return SessionInfo(id: session.id, worker: worker, request: session.request, legs: legInfo,
                           ageSeconds: Double(now &- session.created) / 1e9,
                           idleSeconds: Double(now &- max(lastHeard, session.created)) / 1e9)
    }

    func remove(_ index: Int32, _ session: SessionState, _ reason: EndReason) {
        var closing: [SocketID] = []
        forget(index, session, reason, closing: &closing)
        engine.unregister(closing)
        releasePorts(of: session)
    }

    /// Takes a session out of the tables and adds its sockets to `closing`; the caller closes
    /// them (all at once) and then calls `releasePorts`, so no port is handed out while its
    /// socket is still open.
    func forget(_ index: Int32, _ session: SessionState, _ reason: EndReason, closing: inout [SocketID]) {
        let first = Int(session.firstLeg)
        if !offloaded.isEmpty {
            takeOffloaded(group: first)
            if session.request.rtcp == .pair { takeOffloaded(group: first + session.request.legs) }
        }
        account(session, reason)
        for leg in first..<(first + session.slotCount) {
            engine.disown(legs[leg].socket)
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
    func expire() {
        if !offloaded.isEmpty { refreshOffloaded() }
        var closing: [SocketID] = []
        var expired: [SessionState] = []
        for index in sessions.indices {
            guard let session = sessions[index] else { continue }
            let first = Int(session.firstLeg)
            var last = session.created
            for leg in first..<(first + session.slotCount) { last = max(last, lastHeard(leg)) }
            if now &- last > session.idleTimeout {
                forget(Int32(index), session, .idle, closing: &closing)
                expired.append(session)
                sessionsExpired &+= 1
            }
        }
        guard !closing.isEmpty else { return }
        engine.unregister(closing)
        for session in expired { releasePorts(of: session) }
    }

    /// Closes every session (the worker is stopping).
    func shutDown() {
        for index in sessions.indices { if let session = sessions[index] { remove(Int32(index), session, .shutdown) } }
    }
}
