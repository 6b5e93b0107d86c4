import DatagramEngine
import SystemSupport
import Dispatch
import Synchronization

/// The relay's control plane: starts the workers, hands them sessions, and collects their
/// stats. Safe to use from any thread (the HTTP server's). Sessions are spread over workers
/// round-robin; each lives entirely in its worker.
public final class Relay: Sendable {
    public let settings: RelaySettings
    /// TURN state every worker shares and reloads change: quotas, alternates, relay-wide
    /// counts, port reservations, the TLS context.
    public let turnState = TurnSharedState()
    private let workers: [WorkerShared]
    private let ruleShares: [RuleShared]
    private let threads = Mutex<[WorkerThread]>([])
    /// Which worker owns each session id; also the count the session cap applies to.
    private let directory = Mutex<[String: Int]>([:])
    private let nextWorker = Atomic<Int>(0)
    private let draining = Atomic<Bool>(false)
    /// `settings.maxSessions` until a reload changes it.
    private let sessionCap: Atomic<Int>
    /// How long a control call waits for a worker before answering 503.
    let replyTimeout: DispatchTimeInterval

    public init(settings: RelaySettings, replyTimeout: DispatchTimeInterval = .seconds(3)) {
        self.settings = settings
        self.replyTimeout = replyTimeout
        workers = (0..<max(1, settings.workers)).map { WorkerShared(index: $0) }
        ruleShares = settings.rules.map(RuleShared.init)
        sessionCap = Atomic(settings.maxSessions)
        if let turn = settings.turn {
            turnState.update(turn.limits)
            turnState.update(turn.alternates)
        }
        turnState.setECNMarking(settings.ecnMarking)
    }

    /// Starts every worker and waits until each has its engine and listeners. Returns the
    /// backend and why it was chosen; throws the first worker's start-up error.
    public func start() throws(SystemCallError) -> (backend: Backend, reason: String) {
        let outcomes = Mutex<[Result<(Backend, String), SystemCallError>]>([])
        let started = DispatchSemaphore(value: 0)
        var spawned: [WorkerThread] = []
        for shared in workers {
            let settings = self.settings
            let turnState = self.turnState
            let shares = ruleShares
            spawned.append(WorkerThread(name: "mr-worker-\(shared.index)") {
                let worker: Worker
                do throws(SystemCallError) {
                    worker = try Worker(shared: shared, settings: settings, turnState: turnState, ruleShares: shares)
                } catch {
                    outcomes.withLock { $0.append(.failure(error)) }
                    started.signal()
                    return
                }
                outcomes.withLock { $0.append(.success((worker.engine.backend, worker.engine.backendReason))) }
                started.signal()
                worker.run()
            })
        }
        for _ in workers { started.wait() }
        threads.withLock { $0 = spawned }
        let results = outcomes.withLock { $0 }
        for result in results {
            if case .failure(let error) = result {
                stop()
                throw error
            }
        }
        guard case .success(let first) = results[0] else { fatalError("unreachable") }
        return (first.0, first.1)
    }

    /// Stops every worker (closing all sockets) and waits for their threads.
    public func stop() {
        for worker in workers { worker.stop() }
        let joined = threads.withLock { threads in
            let all = threads
            threads.removeAll()
            return all
        }
        for thread in joined { thread.join() }
    }

    public var workerCount: Int { workers.count }

    /// From now on new sessions are refused and new TURN allocations sent to an alternate (or
    /// served as before without one); forwarding goes on.
    public func beginDrain() {
        draining.store(true, ordering: .releasing)
        turnState.beginDrain()
    }
    public var isDraining: Bool { draining.load(ordering: .acquiring) }

    public var sessionCount: Int { directory.withLock { $0.count } }

    /// The session cap now in force: `settings.maxSessions` until `updateLimits` changes it.
    public var maxSessions: Int { sessionCap.load(ordering: .relaxed) }

    /// Changes the caps that may change while the relay runs (a config reload): the session cap,
    /// every forward rule's client cap and client idle timeout, TURN's reloadable quotas and
    /// whether new TURN allocations mark CE (forward rules keep the marking they started with).
    /// Existing sessions, clients and channels stay, even beyond a lowered cap; only new ones
    /// are refused.
    public func updateLimits(_ limits: RelayLimits) {
        sessionCap.store(limits.maxSessions, ordering: .relaxed)
        if settings.turn != nil { turnState.update(limits.turn) }
        turnState.setECNMarking(limits.ecnMarking)
        for share in ruleShares {
            share.maxClients.store(limits.maxClientsPerRule, ordering: .relaxed)
            share.idleTimeoutSeconds.store(limits.clientIdleTimeoutSeconds, ordering: .relaxed)
        }
    }

    /// New TURN alternates (a config reload); redirects from now on name them.
    public func updateAlternates(_ alternates: TurnAlternates) {
        if settings.turn != nil { turnState.update(alternates) }
    }

    public func createSession(_ request: SessionRequest) -> Result<SessionInfo, RelayError> {
        guard !isDraining else { return .failure(.draining) }
        let id = Relay.newSessionID()
        func reserve() -> Int? {
            directory.withLock { directory in
                guard directory.count < maxSessions else { return nil }
                let index = nextWorker.add(1, ordering: .relaxed).oldValue % workers.count
                directory[id] = index
                return index
            }
        }
        // At the cap, forget sessions the workers expired since, then try once more.
        guard let index = reserve() ?? { _ = sessions(); return reserve() }() else {
            return .failure(.sessionCapReached(maxSessions))
        }
        guard let result = ask(index, { reply in .create(request, id: id, reply: reply) }) else {
            // The worker may still create it later: have it deleted then, so nothing is orphaned.
            workers[index].post(.delete(id, reply: { _ in }))
            _ = directory.withLock { $0.removeValue(forKey: id) }
            return .failure(.workerUnresponsive)
        }
        if case .failure = result { _ = directory.withLock { $0.removeValue(forKey: id) } }
        return result
    }

    /// Deletes a session: true when it was there, false when not, an error when its worker did
    /// not answer in time (then nothing is known, so nothing is forgotten).
    public func deleteSession(_ id: String) -> Result<Bool, RelayError> {
        guard let index = directory.withLock({ $0[id] }) else { return .success(false) }
        guard let deleted = ask(index, { reply in .delete(id, reply: reply) }) else { return .failure(.workerUnresponsive) }
        _ = directory.withLock { $0.removeValue(forKey: id) }
        return .success(deleted)
    }

    /// A session's snapshot, nil when there is no such session, or an error when its worker did
    /// not answer in time.
    public func session(_ id: String) -> Result<SessionInfo?, RelayError> {
        guard let index = directory.withLock({ $0[id] }) else { return .success(nil) }
        guard let answer = ask(index, { reply in .describe(id, reply: reply) }) else { return .failure(.workerUnresponsive) }
        if answer == nil {
            // The worker expired it: forget it here too.
            _ = directory.withLock { $0.removeValue(forKey: id) }
        }
        return .success(answer)
    }

    /// Every session, or an error when a worker did not answer in time. Sessions a worker that
    /// answered no longer has (it expired them) are forgotten; a silent worker's are kept.
    public func sessions() -> Result<[SessionInfo], RelayError> {
        var all: [SessionInfo] = []
        var silent = false
        for index in workers.indices {
            if let listed = ask(index, { reply in .list(reply: reply) }) {
                let live = Set(listed.map(\.id))
                directory.withLock { directory in
                    for (id, worker) in directory where worker == index && !live.contains(id) { directory[id] = nil }
                }
                all += listed
            } else {
                silent = true
            }
        }
        return silent ? .failure(.workerUnresponsive) : .success(all.sorted { $0.id < $1.id })
    }

    /// TURN allocations, at most `limit` from each worker (the caller trims the total), or an
    /// error when a worker did not answer in time.
    public func turnAllocations(limit: Int) -> Result<[TurnAllocationInfo], RelayError> {
        var all: [TurnAllocationInfo] = []
        for index in workers.indices {
            guard let listed = ask(index, { reply in .turnAllocations(limit: limit, reply: reply) }) else {
                return .failure(.workerUnresponsive)
            }
            all += listed
        }
        return .success(all)
    }

    /// The latest snapshot of every worker (at most ~100 ms old).
    public func stats() -> [WorkerStats] {
        workers.map { $0.published.withLock { $0 } }
    }

    /// Whether every worker published a snapshot within `seconds` (they do ten times a second
    /// while their loop turns): what the systemd watchdog should vouch for.
    public func workersAreTurning(within seconds: Double = 5) -> Bool {
        let now = MonotonicClock.now()
        return stats().allSatisfy { now &- $0.publishedAt < UInt64(seconds * 1e9) }
    }

    /// Posts a command and waits for the worker's answer, or nil after `replyTimeout`.
    private func ask<T: Sendable>(_ index: Int, _ make: (@escaping @Sendable (T) -> Void) -> WorkerCommand) -> T? {
        let answer = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        workers[index].post(make { value in
            answer.withLock { $0 = value }
            done.signal()
        })
        guard done.wait(timeout: .now() + replyTimeout) == .success else { return nil }
        return answer.withLock { $0 }
    }

    static func newSessionID() -> String {
        var generator = SystemRandomNumberGenerator()
        let value = generator.next() as UInt64
        let hex = String(value, radix: 16)
        return "s-" + String(repeating: "0", count: 16 - hex.count) + hex
    }
}
