import Glibc
import CURing
import NetAddress
import SystemSupport

/// One io_uring with a provided-buffer ring for multishot IORING_OP_RECVMSG, owned by one
/// engine on one thread. Every pointer the kernel is given lives in here, is allocated once and
/// never moves: the ring, the buffer ring and its buffers, the receive template, the wake-up
/// read's buffer. Sends point at the send vectors, which their owner keeps still until the
/// sends complete; streams' receives and sends point into their `StreamBuffers`, which this
/// ring keeps alive until it is gone (`lend`). Submissions, the one reap loop and the buffers'
/// lending are here; what the engine does with a completion is `RingBackend`'s.
final class Ring {
    static let submissionEntries: UInt32 = 2048
    static let completionEntries: UInt32 = 16384
    static let nameLength = 32      // sockaddr_in6 (28) rounded up so control stays aligned
    static let controlLength = ReceiveMetadata.capacity
    static let headerLength = MemoryLayout<io_uring_recvmsg_out>.size + nameLength + controlLength
    static let bufferGroup: UInt16 = 0

    private let ring: UnsafeMutablePointer<io_uring>
    private let bufferRing: UnsafeMutablePointer<io_uring_buf_ring>
    private let bufferCount: UInt32
    private let bufferSize: Int
    private let buffers: UnsafeMutableRawPointer
    private let template: UnsafeMutablePointer<msghdr>
    private let held: UnsafeMutablePointer<UInt16>
    @exclusivity(unchecked) private var heldCount = 0
    @exclusivity(unchecked) private var recycledSinceAdvance: Int32 = 0
    private let wakeDescriptor: Int32
    private let wakeBuffer: UnsafeMutablePointer<UInt64>
    private var streamBuffers: StreamBuffers?
    /// Completions kept for a later turn (met while `RingBackend` waited for sends or
    /// cancellations): a ring of `stashCapacity`, oldest at `stashHead`. Never grown on the
    /// packet path, only by `reserveStash` when a socket is registered. Why it cannot overflow:
    /// a completion is kept only while the engine waits for something else, and what can be
    /// waiting is bounded. (a) A receive completion carrying a provided buffer keeps that buffer
    /// lent until it is handled: at most `bufferCount` of them. (b) A receive completion without
    /// a buffer ends its multishot receive (ENOBUFS, an error, a cancel), and that slot is armed
    /// again only after the completion is handled: at most one per socket slot. (c) A cancel
    /// completion: at most one per socket slot being unregistered. (d) The eventfd read: one
    /// armed at a time. So `bufferCount + 2 * slots + 1` is enough; `keep` stops the process
    /// with a clear message should that reasoning ever break, rather than overwrite one.
    private var stash: UnsafeMutablePointer<RingCompletion>
    private var stashCapacity: Int
    @exclusivity(unchecked) private var stashHead = 0
    @exclusivity(unchecked) private(set) var stashCount = 0
    @exclusivity(unchecked) private(set) var pendingSubmissions = 0
    @exclusivity(unchecked) private var syscalls: UInt64 = 0
    /// Whether the kernel took SINGLE_ISSUER and DEFER_TASKRUN (Linux 6.1).
    let deferredTaskRun: Bool

    /// A ring whose provided buffers each take one datagram: `bufferSize` bytes for the header
    /// and the payload, a multiple of 8 so that every buffer's header is aligned.
    init(buffers wanted: Int, bufferSize: Int, wakeDescriptor: Int32) throws(SystemCallError) {
        precondition(bufferSize % 8 == 0 && bufferSize > Ring.headerLength)
        ring = .allocate(capacity: 1)
        ring.initialize(to: io_uring())
        var params = io_uring_params()
        let base = UInt32(IORING_SETUP_CQSIZE) | UInt32(IORING_SETUP_SUBMIT_ALL)
        params.flags = base | UInt32(IORING_SETUP_SINGLE_ISSUER) | UInt32(IORING_SETUP_DEFER_TASKRUN)
        params.cq_entries = Ring.completionEntries
        var result = io_uring_queue_init_params(Ring.submissionEntries, ring, &params)
        var deferred = true
        if result == -EINVAL {
            // Kernels before 6.1 know neither SINGLE_ISSUER nor DEFER_TASKRUN.
            params = io_uring_params()
            params.flags = base
            params.cq_entries = Ring.completionEntries
            result = io_uring_queue_init_params(Ring.submissionEntries, ring, &params)
            deferred = false
        }
        guard result == 0 else {
            ring.deallocate()
            throw SystemCallError("io_uring_setup", errno: -result)
        }
        deferredTaskRun = deferred

        var count: UInt32 = 1
        while count < UInt32(wanted) { count <<= 1 }
        bufferCount = min(count, 32768)
        self.bufferSize = bufferSize
        var ringMemory: UnsafeMutableRawPointer?
        let ringBytes = Int(bufferCount) * MemoryLayout<io_uring_buf>.stride
        guard posix_memalign(&ringMemory, Int(getpagesize()), ringBytes) == 0, let ringMemory else {
            io_uring_queue_exit(ring)
            ring.deallocate()
            throw SystemCallError("posix_memalign for the io_uring buffer ring", errno: ENOMEM)
        }
        memset(ringMemory, 0, ringBytes)
        bufferRing = ringMemory.bindMemory(to: io_uring_buf_ring.self, capacity: 1)
        buffers = .allocate(byteCount: Int(bufferCount) * bufferSize, alignment: 64)
        template = .allocate(capacity: 1)
        template.initialize(to: msghdr())
        template.pointee.msg_namelen = socklen_t(Ring.nameLength)
        template.pointee.msg_controllen = Ring.controlLength
        stashCapacity = Ring.stashCapacity(buffers: Int(bufferCount), slots: 1024)
        stash = .allocate(capacity: stashCapacity)
        held = .allocate(capacity: Int(bufferCount))
        wakeBuffer = .allocate(capacity: 1)
        self.wakeDescriptor = wakeDescriptor

        var registration = io_uring_buf_reg()
        registration.ring_addr = UInt64(UInt(bitPattern: ringMemory))
        registration.ring_entries = bufferCount
        registration.bgid = Ring.bufferGroup
        let registered = io_uring_register_buf_ring(ring, &registration, 0)
        guard registered == 0 else { throw SystemCallError("io_uring_register_buf_ring", errno: -registered) }
        io_uring_buf_ring_init(bufferRing)
        for id in 0..<Int(bufferCount) { recycle(UInt16(id)) }
        commitRecycled()
        try probeMultishotReceive()
        prepareWakeRead()
    }

    /// Tears the ring down (the kernel cancels what is in flight) and frees the memory.
    deinit {
        io_uring_queue_exit(ring)
        ring.deallocate()
        free(UnsafeMutableRawPointer(bufferRing))
        buffers.deallocate()
        template.deallocate()
        held.deallocate()
        wakeBuffer.deallocate()
        stash.deallocate()
    }

    /// Multishot RECVMSG came with Linux 6.0, after provided-buffer rings (5.19): arm one on a
    /// scratch socket and see whether the kernel refuses it at once, so that `auto` can fall
    /// back instead of running receives that can never deliver.
    private func probeMultishotReceive() throws(SystemCallError) {
        let type = Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let probe = Int32(try SystemCall.require("socket for the io_uring probe") { Int(socket(AF_INET, type, 0)) })
        defer { SystemCall.close(probe) }
        let tag = RingTag(.receive, generation: UInt32.max, slot: 0xFF_FFFF)
        prepareReceive(descriptor: probe, tag: tag)
        prepareCancel(of: tag, tag: RingTag(.cancel, generation: UInt32.max, slot: 0xFF_FFFF))
        // Both the receive's last completion and the cancellation's arrive; wait for the two.
        var seen = 0
        var refused: Int32 = 0
        while seen < 2 {
            submitAndWaitOne()
            seen += reap { completion in
                if completion.tag == tag, completion.result < 0, completion.result != -ECANCELED, completion.result != -ENOBUFS {
                    refused = -completion.result
                }
                return true
            }
        }
        _ = takeSyscalls()
        if refused != 0 {
            throw SystemCallError("io_uring multishot receive", errno: refused, advice: "it needs Linux 6.0 or later")
        }
    }

    static func refusalAdvice(_ code: Int32) -> String {
        switch code {
        case EPERM, EACCES:
            "io_uring is disabled (sysctl kernel.io_uring_disabled) or blocked by a seccomp profile, as in Docker's default; see deploy/container/README.md"
        case ENOSYS: "this kernel has no io_uring"
        case ENOMEM: "not enough locked memory for the ring (ulimit -l)"
        default: "using mmsg instead"
        }
    }

    // MARK: submissions

    /// A submission entry; when the queue is full, what is queued is submitted first. Inlined
    /// into each send and receive, since the call showed in callgrind's counts per datagram;
    /// the full queue, met once per 2048 submissions at most, is kept out of line.
    @inline(__always)
    private func nextSubmission(tag: RingTag) -> UnsafeMutablePointer<io_uring_sqe> {
        var entry = io_uring_get_sqe(ring)
        while entry == nil {
            submitFullQueue()
            entry = io_uring_get_sqe(ring)
        }
        pendingSubmissions += 1
        io_uring_sqe_set_data64(entry, tag.rawValue)
        return entry!
    }

    /// Submits a full queue. If the kernel takes nothing (its completion queue is overflowing),
    /// waits for a completion first.
    @inline(never)
    private func submitFullQueue() {
        syscalls &+= 1
        if io_uring_submit_and_get_events(ring) <= 0 {
            syscalls &+= 1
            _ = io_uring_submit_and_wait(ring, 1)
        }
        pendingSubmissions = 0
    }

    /// A multishot receive on `descriptor` into the provided buffers.
    func prepareReceive(descriptor: Int32, tag: RingTag) {
        let entry = nextSubmission(tag: tag)
        // MSG_TRUNC: a datagram longer than its buffer reports its real length (payloadlen).
        io_uring_prep_recvmsg_multishot(entry, descriptor, template, UInt32(MSG_TRUNC))
        entry.pointee.flags |= UInt8(1 << IOSQE_BUFFER_SELECT_BIT)
        entry.pointee.buf_group = Ring.bufferGroup
    }

    /// The cancellation of the submission tagged `target`.
    func prepareCancel(of target: RingTag, tag: RingTag) {
        let entry = nextSubmission(tag: tag)
        io_uring_prep_cancel64(entry, target.rawValue, 0)
    }

    /// A send of `header`, which must stay where it is until the send's completion is reaped.
    /// MSG_DONTWAIT: a full socket buffer is an EAGAIN result (counted, as with sendmmsg), never
    /// a poll that would hold the worker until the socket drains.
    func prepareSend(descriptor: Int32, header: UnsafeMutablePointer<msghdr>, tag: RingTag) {
        let entry = nextSubmission(tag: tag)
        io_uring_prep_sendmsg(entry, descriptor, header, UInt32(MSG_DONTWAIT))
    }

    /// A multishot accept on a listener: one completion per connection, its result the new
    /// descriptor (blocking: io_uring polls for it, and the engine makes no blocking call on it).
    func prepareAccept(descriptor: Int32, tag: RingTag) {
        let entry = nextSubmission(tag: tag)
        io_uring_prep_multishot_accept(entry, descriptor, nil, nil, Int32(SOCK_CLOEXEC.rawValue))
    }

    /// A receive into `space`, a stream's free input, which the stream keeps still (no
    /// compaction) until the completion.
    func prepareStreamReceive(descriptor: Int32, into space: UnsafeMutableRawBufferPointer, tag: RingTag) {
        let entry = nextSubmission(tag: tag)
        io_uring_prep_recv(entry, descriptor, space.baseAddress, space.count, 0)
    }

    /// A send of `bytes`, a stream's oldest output, which stays in its ring until the
    /// completion says how much the kernel took. Not MSG_DONTWAIT: a full socket buffer makes
    /// the kernel wait for room, which is the point (one send in flight per stream, awaited by
    /// nobody); MSG_NOSIGNAL: a closed peer is an EPIPE result, not a signal.
    func prepareStreamSend(descriptor: Int32, bytes: UnsafeRawBufferPointer, tag: RingTag) {
        let entry = nextSubmission(tag: tag)
        io_uring_prep_send(entry, descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
    }

    /// Keeps the streams' buffers alive as long as this ring: receives and sends in flight
    /// point into them, and `deinit` ends those (io_uring_queue_exit) before it lets go.
    func lend(_ buffers: StreamBuffers) { streamBuffers = buffers }

    /// A read of the wake-up eventfd: its completion is the wake-up.
    func prepareWakeRead() {
        let entry = nextSubmission(tag: RingTag(.wake, slot: 0))
        io_uring_prep_read(entry, wakeDescriptor, wakeBuffer, 8, 0)
    }

    func submit() {
        syscalls &+= 1
        _ = io_uring_submit(ring)
        pendingSubmissions = 0
    }

    /// Submits what is queued and has the kernel post finished work (DEFER_TASKRUN runs it
    /// only inside io_uring_enter), without waiting.
    func submitAndGetEvents() {
        syscalls &+= 1
        _ = io_uring_submit_and_get_events(ring)
        pendingSubmissions = 0
    }

    /// Submits what is queued and waits for at least one completion, or `milliseconds`. A
    /// signal ends the wait early, like the timeout: the caller's turn simply finds nothing.
    func submitAndWait(milliseconds: Int32) {
        var timeout = __kernel_timespec(tv_sec: Int64(milliseconds / 1000), tv_nsec: Int64(milliseconds % 1000) * 1_000_000)
        var first: UnsafeMutablePointer<io_uring_cqe>?
        syscalls &+= 1
        _ = io_uring_submit_and_wait_timeout(ring, &first, 1, &timeout, nil)
        pendingSubmissions = 0
    }

    /// Submits what is queued and waits for at least one completion, with no time limit.
    func submitAndWaitOne() {
        syscalls &+= 1
        _ = io_uring_submit_and_wait(ring, 1)
        pendingSubmissions = 0
    }

    /// io_uring_enter calls since the last time this was asked, for the engine's counters.
    func takeSyscalls() -> UInt64 {
        defer { syscalls = 0 }
        return syscalls
    }

    // MARK: completions

    /// Whether completions wait in the completion queue, unreaped.
    var hasReadyCompletions: Bool { io_uring_cq_ready(ring) > 0 }

    /// The one reap loop: hands the completions ready now, oldest first, to `body` until it
    /// returns false (that completion is consumed too), and releases their queue entries.
    /// Returns how many it handed over; 0 when none was ready.
    ///
    /// It reads the completion queue in place, as liburing's io_uring_for_each_cqe does, rather
    /// than through io_uring_peek_batch_cqe: that is a call into liburing and a copy of pointers
    /// per completion, which showed in callgrind's counts per datagram. (peek also enters the
    /// kernel to flush an overflowed completion queue when it finds nothing; every caller here
    /// enters with GETEVENTS when this returns 0, which flushes it just the same.)
    @inline(__always)
    func reap(_ body: (RingCompletion) -> Bool) -> Int {
        let ready = io_uring_cq_ready(ring)
        guard ready > 0 else { return 0 }
        let head = ring.pointee.cq.khead.pointee
        let mask = ring.pointee.cq.ring_mask
        let entries = ring.pointee.cq.cqes!
        var consumed: UInt32 = 0
        while consumed < ready {
            let entry = entries[Int(truncatingIfNeeded: (head &+ consumed) & mask)]
            consumed &+= 1
            if !body(RingCompletion(tag: RingTag(rawValue: entry.user_data), result: entry.res, flags: entry.flags)) { break }
        }
        io_uring_cq_advance(ring, consumed)
        return Int(consumed)
    }

    static func stashCapacity(buffers: Int, slots: Int) -> Int { buffers + 2 * slots + 1 }

    /// Makes room for the completions `slots` socket slots may leave kept (see `stash`). The
    /// control path calls it when a socket is registered; it allocates only when it grows.
    func reserveStash(forSockets slots: Int) {
        let needed = Ring.stashCapacity(buffers: Int(bufferCount), slots: slots)
        guard needed > stashCapacity else { return }
        let capacity = max(needed, stashCapacity * 2)
        let grown = UnsafeMutablePointer<RingCompletion>.allocate(capacity: capacity)
        for index in 0..<stashCount { grown[index] = stash[(stashHead + index) % stashCapacity] }
        stash.deallocate()
        stash = grown
        stashCapacity = capacity
        stashHead = 0
    }

    /// Keeps a completion for a later turn (one met while waiting for something else).
    @inline(__always)
    func keep(_ completion: RingCompletion) {
        precondition(stashCount < stashCapacity, "io_uring: more kept completions than buffers and sockets allow")
        stash[(stashHead + stashCount) % stashCapacity] = completion
        stashCount += 1
    }

    /// The oldest kept completion; only when `stashCount > 0`.
    @inline(__always)
    func takeKept() -> RingCompletion {
        let completion = stash[stashHead]
        stashHead = (stashHead + 1) % stashCapacity
        stashCount -= 1
        return completion
    }

    // MARK: provided buffers

    /// What one receive completion's buffer holds: nil when the datagram did not fit the
    /// buffer's layout (counted as truncated by the caller).
    @inline(__always)
    func datagram(inBuffer id: UInt16, length: Int32)
        -> (source: Endpoint?, metadata: ReceiveMetadata, truncated: Bool, size: Int, payload: UnsafeRawBufferPointer)? {
        let buffer = buffers + Int(id) * bufferSize
        guard let header = io_uring_recvmsg_validate(buffer, length, template) else { return nil }
        let name = io_uring_recvmsg_name(header)!
        let metadata = ReceiveMetadata(control: name + Int(template.pointee.msg_namelen), length: Int(header.pointee.controllen))
        let source = Endpoint(reading: name, length: header.pointee.namelen)
        let payloadLength = Int(io_uring_recvmsg_payload_length(header, length, template))
        let payload = UnsafeRawBufferPointer(start: io_uring_recvmsg_payload(header, template), count: payloadLength)
        let truncated = header.pointee.flags & UInt32(MSG_TRUNC) != 0
        return (source, metadata, truncated, truncated ? Int(header.pointee.payloadlen) : payloadLength, payload)
    }

    /// Gives a buffer back to the kernel (visible after `commitRecycled`).
    @inline(__always)
    func recycle(_ id: UInt16) {
        io_uring_buf_ring_add(bufferRing, buffers + Int(id) * bufferSize, UInt32(bufferSize), id,
                              io_uring_buf_ring_mask(bufferCount), recycledSinceAdvance)
        recycledSinceAdvance += 1
    }

    func commitRecycled() {
        guard recycledSinceAdvance > 0 else { return }
        io_uring_buf_ring_advance(bufferRing, recycledSinceAdvance)
        recycledSinceAdvance = 0
    }

    /// Lends a buffer to this turn's datagrams; `recycleHeld` gives it back next turn.
    @inline(__always)
    func hold(_ id: UInt16) {
        held[heldCount] = id
        heldCount += 1
    }

    /// Returns the buffers lent to the last turn's datagrams, whose sends have completed.
    func recycleHeld() {
        for index in 0..<heldCount { recycle(held[index]) }
        heldCount = 0
        commitRecycled()
    }
}
