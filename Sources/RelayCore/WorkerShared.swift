import DatagramEngine
import SystemSupport
import Synchronization

/// A command the control plane hands to a worker. The worker runs it on its own thread, so a
/// session's state is only ever touched there; `reply` is called on the worker's thread.
enum WorkerCommand: Sendable {
    case create(SessionRequest, id: String, reply: @Sendable (Result<SessionInfo, RelayError>) -> Void)
    case delete(String, reply: @Sendable (Bool) -> Void)
    case describe(String, reply: @Sendable (SessionInfo?) -> Void)
    case list(reply: @Sendable ([SessionInfo]) -> Void)
    case turnAllocations(limit: Int, reply: @Sendable ([TurnAllocationInfo]) -> Void)
}

/// What one worker has done, published as a snapshot a few times a second.
public struct WorkerStats: Sendable {
    public var worker: Int
    public var engine = EngineCounters()
    /// Drops decided by the relay (the engine's own — truncated, kernel, send errors — are in
    /// `engine`; `allDrops` merges both).
    public var drops = DropCounts()
    /// CE marks the relay set, by cause, over sessions, forward rules and TURN (CE that arrived
    /// is in `engine.ecnIn`).
    public var ceMarks = CEMarkCounts()
    public var sessions = 0
    public var forwardClients = 0
    public var sockets = 0
    public var lifecycle = LifecycleCounts()
    public var turn = TurnStats()
    /// The latest datagram the engine dropped as longer than the maximum size (counted in
    /// `engine.truncated`).
    public var lastTruncated: TruncatedDatagram?
    /// CPU the worker's own thread has used (getrusage RUSAGE_THREAD), user and system.
    public var cpuUserSeconds = 0.0
    public var cpuSystemSeconds = 0.0
    /// When this snapshot was taken (MonotonicClock nanoseconds): a worker that stops
    /// publishing is stuck.
    public var publishedAt: UInt64 = 0

    public init(worker: Int) { self.worker = worker }

    public var allDrops: DropCounts {
        var all = drops
        all[.truncated] &+= engine.truncated
        all[.kernelOverflow] &+= engine.kernelDrops
        all[.sendError] &+= engine.sendErrors.total
        return all
    }
}

/// How many sessions and forward clients a worker opened and closed, and why they closed.
public struct LifecycleCounts: Sendable, SummedCounters {
    public var sessionsCreated: UInt64 = 0
    public var sessionsDeleted: UInt64 = 0
    public var sessionsExpired: UInt64 = 0
    public var clientsCreated: UInt64 = 0
    public var clientsExpired: UInt64 = 0

    public init() {}

    public static var summedFields: [WritableKeyPath<LifecycleCounts, UInt64>] {
        [\.sessionsCreated, \.sessionsDeleted, \.sessionsExpired, \.clientsCreated, \.clientsExpired]
    }

    public mutating func merge(_ other: LifecycleCounts) { add(other) }
}

/// The part of a worker other threads may touch: its inbox, its published stats and its
/// run flag. Locks here are taken per command or per snapshot, never per datagram.
final class WorkerShared: Sendable {
    let index: Int
    private let inbox = Mutex<[WorkerCommand]>([])
    /// Lets the worker check for commands each turn without taking the lock.
    let pendingCommands = Atomic<Int>(0)
    let running = Atomic<Bool>(true)
    let published: Mutex<WorkerStats>
    let waker = Mutex<EngineWaker?>(nil)

    init(index: Int) {
        self.index = index
        published = Mutex(WorkerStats(worker: index))
    }

    func post(_ command: WorkerCommand) {
        inbox.withLock { $0.append(command) }
        pendingCommands.add(1, ordering: .releasing)
        waker.withLock { $0?.wake() }
    }

    func takeCommands() -> [WorkerCommand] {
        guard pendingCommands.load(ordering: .acquiring) > 0 else { return [] }
        let commands = inbox.withLock { inbox in
            let taken = inbox
            inbox.removeAll()
            return taken
        }
        pendingCommands.subtract(commands.count, ordering: .releasing)
        return commands
    }

    func stop() {
        running.store(false, ordering: .releasing)
        waker.withLock { $0?.wake() }
    }
}

/// Per-rule state shared by every worker: the client count the cap applies to, and the cap and
/// idle timeout themselves, which a reload may change while the workers run. Read once per new
/// client and once per expiry sweep, never per datagram.
final class RuleShared: Sendable {
    let clients = Atomic<Int>(0)
    let maxClients: Atomic<Int>
    let idleTimeoutSeconds: Atomic<Int>

    init(_ rule: ForwardRule) {
        maxClients = Atomic(rule.maxClients)
        idleTimeoutSeconds = Atomic(rule.idleTimeoutSeconds)
    }
}
