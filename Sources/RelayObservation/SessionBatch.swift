import ClientSockets
import Foundation
import Synchronization

extension RelayControl {
    /// Requests in flight at once when creating or deleting many sessions: the relay's API
    /// answers one connection at a time, but overlapping our connect/send with its work
    /// roughly halves the time 2,000 sessions take.
    static let parallelRequests = 4

    /// Creates `count` two-leg sessions with `fields` (see `createSession`), several requests at
    /// a time. Returns every session created, even when one request failed (so the caller can
    /// delete them), and the first error.
    public func createSessions(_ count: Int, fields: String = "") -> (created: [RelaySession], error: LoadError?) {
        let slots = Mutex<[RelaySession?]>([RelaySession?](repeating: nil, count: count))
        let firstError = Mutex<LoadError?>(nil)
        let lanes = Swift.min(Self.parallelRequests, Swift.max(1, count))
        DispatchQueue.concurrentPerform(iterations: lanes) { lane in
            for i in stride(from: lane, to: count, by: lanes) {
                if firstError.withLock({ $0 != nil }) { return }
                if interruptRequested.load(ordering: .relaxed) {
                    firstError.withLock { if $0 == nil { $0 = LoadError("interrupted while creating sessions") } }
                    return
                }
                do throws(LoadError) {
                    let session = try createSession(legs: 2, fields: fields)
                    slots.withLock { $0[i] = session }
                } catch {
                    firstError.withLock { if $0 == nil { $0 = error } }
                    return
                }
            }
        }
        return (slots.withLock { $0.compactMap { $0 } }, firstError.withLock { $0 })
    }

    /// Deletes sessions several at a time; failures are ignored (the relay reaps idle sessions).
    public func deleteSessions(_ ids: [String]) {
        let lanes = Swift.min(Self.parallelRequests, Swift.max(1, ids.count))
        DispatchQueue.concurrentPerform(iterations: lanes) { lane in
            for i in stride(from: lane, to: ids.count, by: lanes) { try? deleteSession(ids[i]) }
        }
    }
}
