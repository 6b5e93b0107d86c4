import Glibc
import CURing
import SystemSupport

/// Streams and listeners on the epoll backends: accept4 on a ready listener, one recv per
/// ready stream per turn into its input buffer, sends at flush from its output ring. Each
/// stream is watched for input while its input has room (so an owner that does not consume
/// stops the reading: backpressure) and for output (EPOLLOUT, via EPOLL_CTL_MOD) only while
/// output is pending, so an idle connection costs no wake-ups. A partial send leaves the rest
/// in the ring, in order, for the next EPOLLOUT.
final class PollStreams {
    /// What epoll watches for one stream: this backend's own part of a stream's state.
    struct Interest {
        /// Registered with epoll.
        var polled = false
        var events: UInt32 = 0
    }

    private let state: EngineState
    private let streams: StreamTable
    private let poller: EventPoller
    private let readBudget: Int
    /// By stream index; back to `Interest()` when the stream closes.
    private let interests: UnsafeMutablePointer<Interest>

    init(state: EngineState, streams: StreamTable, poller: EventPoller) {
        self.state = state
        self.streams = streams
        self.poller = poller
        readBudget = state.configuration.streamReadBudget
        interests = .allocate(capacity: max(streams.limit, 1))
        interests.initialize(repeating: Interest(), count: max(streams.limit, 1))
    }

    deinit { interests.deallocate() }

    /// Accepts up to `acceptsPerTurn` connections from a ready listener; the rest stay in the
    /// kernel's backlog, and the listener, level-triggered, is ready again next turn. With every
    /// stream index taken it accepts none and stops watching the listener until one is free.
    func accept(on listener: SocketID, descriptor: Int32) {
        let flags = Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        for _ in 0..<state.configuration.acceptsPerTurn {
            guard streams.hasFreeIndex else {
                if poller.modify(descriptor, tag: EventPoller.tag(listener), events: 0) { streams.pausedListeners.waitForIndex(listener) }
                return
            }
            let outcome = SystemCall.ownOutcome("accept4") { Int(mr_accept4(descriptor, flags)) }
            state.counters.syscalls &+= 1
            switch outcome {
            case .done(let fd):
                streams.adopt(Descriptor(taking: Int32(fd)), listener: listener)
            case .wouldBlock:
                return
            case .failed(ECONNABORTED), .failed(EPROTO):
                continue  // that connection ended before it was accepted; the next may be fine
            case .failed(let code):
                // The connection stays in the backlog for a later turn.
                state.counters.acceptErrors &+= 1
                if PausedListeners.isShortage(code)
                    && poller.modify(descriptor, tag: EventPoller.tag(listener), events: 0) {
                    streams.pausedListeners.pause(listener)
                }
                return
            }
        }
    }

    /// What epoll said about stream `index`.
    func handle(_ index: Int, events: UInt32) {
        if streams[index].phase == .open && events & (EventPoller.input | EventPoller.peerHangUp | EventPoller.hangUpOrError) != 0 {
            read(index)
        }
        if events & EventPoller.output != 0 { send(index) }
        // A hang-up or error is reported even while the stream is not read (its input full, or
        // draining): the connection is over either way, and level-triggered it would be
        // reported on every wait until the stream closed.
        let phase = streams[index].phase
        if events & EventPoller.hangUpOrError != 0
            && (phase == .draining || (phase == .open && streams[index].cursors.inputCount == streams.inputCapacity)) {
            streams.beginClosing(index, events & EPOLLERR.rawValue != 0 ? .reset : .peerClosed)
        }
    }

    /// One recv of at most the read budget into the free space.
    private func read(_ index: Int) {
        let space = streams.receiveSpace(index)
        guard space.count > 0 else { return }
        let descriptor = streams[index].descriptor
        let length = min(space.count, readBudget)
        let outcome = SystemCall.ownOutcome("recv") { recv(descriptor, space.baseAddress, length, Int32(MSG_DONTWAIT)) }
        state.counters.syscalls &+= 1
        switch outcome {
        case .done(0):
            streams.beginClosing(index, .peerClosed)
        case .done(let bytes):
            streams.received(index, bytes)
            // Full now: stop watching for input until the owner consumes.
            if streams[index].cursors.inputCount == streams.inputCapacity { streams.service(index) }
        case .wouldBlock:
            break
        case .failed(let code):
            streams.beginClosing(index, StreamTable.reason(code))
        }
    }

    /// Sends pending output until it is gone or the socket's buffer is full.
    private func send(_ index: Int) {
        let descriptor = streams[index].descriptor
        while streams[index].phase.isLive {
            let chunk = streams.pendingChunk(index)
            guard chunk.count > 0 else { break }
            let outcome = SystemCall.ownOutcome("send") {
                Glibc.send(descriptor, chunk.baseAddress, chunk.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
            }
            state.counters.syscalls &+= 1
            if case .done(let bytes) = outcome {
                streams.sent(index, bytes)
                if bytes == chunk.count { continue }
            } else if case .failed(let code) = outcome {
                streams.beginClosing(index, StreamTable.reason(code))
            }
            break
        }
        // Watch for output exactly while some is pending.
        let pending = streams[index].cursors.outputCount > 0
        if pending != (interests[index].events & EventPoller.output != 0) { streams.service(index) }
    }

    /// The flush: sends what the owners wrote since the last one.
    func flush() {
        streams.takeSends { index in send(index) }
    }

    /// Before and after each wait: brings what epoll watches in line with each stream's state,
    /// and lets closing streams go (unwatched, they are reported closed).
    func service() {
        // A stream that starts closing here is let go in the same call, not a turn later.
        while !streams.serviceList.isEmpty { streams.takeService(serviceOne) }
        streams.pausedListeners.takeDue { listener in
            guard let entry = state.table.entry(listener), entry.kind == .listener else { return }
            _ = poller.modify(entry.descriptor, tag: EventPoller.tag(listener), events: EventPoller.input)
        }
    }

    private func serviceOne(_ index: Int) {
        let stream = streams[index]
        let tag = EventPoller.tag(stream.socket)
        switch stream.phase {
        case .open, .draining:
            var wanted: UInt32 = 0
            if stream.phase == .open && stream.cursors.inputCount < streams.inputCapacity {
                wanted |= EventPoller.input | EventPoller.peerHangUp
            }
            if stream.cursors.outputCount > 0 { wanted |= EventPoller.output }
            if !interests[index].polled {
                do throws(SystemCallError) {
                    try poller.add(stream.descriptor, tag: tag, events: wanted)
                    interests[index] = Interest(polled: true, events: wanted)
                } catch {
                    streams.beginClosing(index, .limit)
                }
            } else if wanted != interests[index].events {
                if poller.modify(stream.descriptor, tag: tag, events: wanted) {
                    interests[index].events = wanted
                } else {
                    streams.beginClosing(index, .limit)
                }
            }
        case .closing:
            if interests[index].polled { poller.remove(stream.descriptor) }
            interests[index] = Interest()
            streams.finish(index)
        case .free, .closed:
            break
        }
    }
}
