import Glibc
import CURing

/// One io_uring with a provided-buffer ring for multishot IORING_OP_RECVMSG, owned by one
/// engine on one thread. The ring structure and every buffer are allocated once and never
/// move: the kernel holds their addresses.
///
/// Completions are tagged `kind << 56 | generation << 24 | slot` so that a completion for a
/// socket that was closed (and its slot reused) is recognised as stale.
final class URingDriver {
    enum Kind: UInt64 {
        case receive = 1, send = 2, wake = 3, cancel = 4
    }

    /// A completion copied out of the CQ ring while waiting for sends, kept for the next receive.
    struct Completion {
        var tag: UInt64
        var result: Int32
        var flags: UInt32
    }

    static let submissionEntries: UInt32 = 2048
    static let completionEntries: UInt32 = 16384
    static let nameLength = 32      // sockaddr_in6 (28) rounded up so control stays aligned
    static let controlLength = 64
    static let headerLength = MemoryLayout<io_uring_recvmsg_out>.size + nameLength + controlLength
    static let bufferGroup: UInt16 = 0

    let ring: UnsafeMutablePointer<io_uring>
    let bufferRing: UnsafeMutablePointer<io_uring_buf_ring>
    let bufferCount: UInt32
    let bufferSize: Int
    let buffers: UnsafeMutableRawPointer
    let template: UnsafeMutablePointer<msghdr>
    let completions: UnsafeMutablePointer<UnsafeMutablePointer<io_uring_cqe>?>
    let completionCapacity = 512
    /// Completions kept for the next receive, oldest first from `stashHead`. An array so that it
    /// can never overflow: its reserved capacity covers every provided buffer plus many ended
    /// receives, and it grows (allocating, in that rare case only) when more are waiting.
    var stash: [Completion] = []
    var stashHead = 0
    var stashCount: Int { stash.count - stashHead }
    let held: UnsafeMutablePointer<UInt16>
    var heldCount = 0
    var recycledSinceAdvance: Int32 = 0
    var toArm: [(slot: Int, generation: UInt32, descriptor: Int32)] = []
    let wakeDescriptor: Int32
    let wakeBuffer: UnsafeMutablePointer<UInt64>
    var pendingSubmissions = 0
    var outstandingSends = 0
    var syscalls: UInt64 = 0
    let deferredTaskRun: Bool
    private var isShutDown = false

    init(configuration: EngineConfiguration, wakeDescriptor: Int32) throws(SystemCallError) {
        ring = .allocate(capacity: 1)
        ring.initialize(to: io_uring())
        var params = io_uring_params()
        let base = UInt32(IORING_SETUP_CQSIZE) | UInt32(IORING_SETUP_SUBMIT_ALL)
        params.flags = base | UInt32(IORING_SETUP_SINGLE_ISSUER) | UInt32(IORING_SETUP_DEFER_TASKRUN)
        params.cq_entries = URingDriver.completionEntries
        var result = io_uring_queue_init_params(URingDriver.submissionEntries, ring, &params)
        var deferred = true
        if result == -EINVAL {
            // Kernels before 6.1 know neither SINGLE_ISSUER nor DEFER_TASKRUN.
            params = io_uring_params()
            params.flags = base
            params.cq_entries = URingDriver.completionEntries
            result = io_uring_queue_init_params(URingDriver.submissionEntries, ring, &params)
            deferred = false
        }
        guard result == 0 else {
            ring.deallocate()
            throw SystemCallError("io_uring_setup", errno: -result)
        }
        deferredTaskRun = deferred

        bufferCount = UInt32(configuration.uringBufferCount)
        bufferSize = configuration.uringBufferSize
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
        template.pointee.msg_namelen = socklen_t(URingDriver.nameLength)
        template.pointee.msg_controllen = URingDriver.controlLength
        completions = .allocate(capacity: completionCapacity)
        stash.reserveCapacity(Int(bufferCount) + 4096)
        held = .allocate(capacity: Int(bufferCount))
        wakeBuffer = .allocate(capacity: 1)
        self.wakeDescriptor = wakeDescriptor
        toArm.reserveCapacity(1024)

        var registration = io_uring_buf_reg()
        registration.ring_addr = UInt64(UInt(bitPattern: ringMemory))
        registration.ring_entries = bufferCount
        registration.bgid = URingDriver.bufferGroup
        let registered = io_uring_register_buf_ring(ring, &registration, 0)
        guard registered == 0 else {
            shutDown()
            throw SystemCallError("io_uring_register_buf_ring", errno: -registered)
        }
        io_uring_buf_ring_init(bufferRing)
        for id in 0..<Int(bufferCount) { recycle(UInt16(id)) }
        commitRecycled()
        do throws(SystemCallError) {
            try probeMultishotReceive()
        } catch {
            shutDown()
            throw error
        }
        armWake()
    }

    /// Multishot RECVMSG came with Linux 6.0, after provided-buffer rings (5.19): arm one on a
    /// scratch socket and see whether the kernel refuses it at once, so that `auto` can fall
    /// back instead of running receives that can never deliver.
    private func probeMultishotReceive() throws(SystemCallError) {
        let probe = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { throw SystemCallError("socket for the io_uring probe", errno: errno) }
        defer { close(probe) }
        let tag = URingDriver.tag(.receive, generation: UInt32.max, slot: 0xFF_FFFF)
        let entry = nextSubmission()
        io_uring_prep_recvmsg_multishot(entry, probe, template, 0)
        entry.pointee.flags |= UInt8(1 << IOSQE_BUFFER_SELECT_BIT)
        entry.pointee.buf_group = URingDriver.bufferGroup
        io_uring_sqe_set_data64(entry, tag)
        let cancel = nextSubmission()
        io_uring_prep_cancel64(cancel, tag, 0)
        io_uring_sqe_set_data64(cancel, URingDriver.tag(.cancel, generation: UInt32.max, slot: 0xFF_FFFF))
        // Both the receive's last completion and the cancellation's arrive; wait for the two.
        var seen = 0
        var refused: Int32 = 0
        while seen < 2 {
            _ = io_uring_submit_and_wait(ring, 1)
            pendingSubmissions = 0
            let ready = peek()
            for index in 0..<ready {
                let completion = completions[index]!.pointee
                if completion.user_data == tag, completion.res < 0, completion.res != -ECANCELED, completion.res != -ENOBUFS {
                    refused = -completion.res
                }
                seen += 1
            }
            advance(ready)
        }
        if refused != 0 {
            throw SystemCallError("io_uring multishot receive", errno: refused, advice: "it needs Linux 6.0 or later")
        }
    }

    deinit { shutDown() }

    /// Tears the ring down (the kernel cancels what is in flight) and frees the memory.
    func shutDown() {
        guard !isShutDown else { return }
        isShutDown = true
        io_uring_queue_exit(ring)
        ring.deallocate()
        free(UnsafeMutableRawPointer(bufferRing))
        buffers.deallocate()
        template.deallocate()
        completions.deallocate()
        held.deallocate()
        wakeBuffer.deallocate()
    }

    static func tag(_ kind: Kind, generation: UInt32 = 0, slot: Int) -> UInt64 {
        kind.rawValue << 56 | UInt64(generation) << 24 | UInt64(slot & 0xFF_FFFF)
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

    /// A submission entry; when the queue is full, what is queued is submitted first.
    func nextSubmission() -> UnsafeMutablePointer<io_uring_sqe> {
        while true {
            if let entry = io_uring_get_sqe(ring) {
                pendingSubmissions += 1
                return entry
            }
            // The queue is full: submit it. If the kernel takes nothing (its completion
            // queue is overflowing), wait for completions and try again.
            syscalls &+= 1
            if io_uring_submit_and_get_events(ring) <= 0 {
                syscalls &+= 1
                _ = io_uring_submit_and_wait(ring, 1)
            }
            pendingSubmissions = 0
        }
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

    /// Submits what is queued and waits for at least one completion, or `milliseconds`.
    func submitAndWait(milliseconds: Int32) {
        var timeout = __kernel_timespec(tv_sec: Int64(milliseconds / 1000), tv_nsec: Int64(milliseconds % 1000) * 1_000_000)
        var first: UnsafeMutablePointer<io_uring_cqe>?
        syscalls &+= 1
        _ = io_uring_submit_and_wait_timeout(ring, &first, 1, &timeout, nil)
        pendingSubmissions = 0
    }

    /// Waits for at least one completion, with no time limit (used only for sends in flight).
    func submitAndWaitOne() {
        syscalls &+= 1
        _ = io_uring_submit_and_wait(ring, 1)
        pendingSubmissions = 0
    }

    func peek() -> Int {
        Int(io_uring_peek_batch_cqe(ring, completions, UInt32(completionCapacity)))
    }

    func advance(_ count: Int) {
        if count > 0 { io_uring_cq_advance(ring, UInt32(count)) }
    }

    // MARK: receives

    func arm(slot: Int, generation: UInt32, descriptor: Int32) {
        toArm.append((slot, generation, descriptor))
    }

    /// Queues a multishot receive for every socket waiting for one.
    func armPending() {
        guard !toArm.isEmpty else { return }
        for (slot, generation, descriptor) in toArm {
            let entry = nextSubmission()
            // MSG_TRUNC: a datagram longer than a buffer reports its real length (payloadlen).
            io_uring_prep_recvmsg_multishot(entry, descriptor, template, UInt32(MSG_TRUNC))
            entry.pointee.flags |= UInt8(1 << IOSQE_BUFFER_SELECT_BIT)
            entry.pointee.buf_group = URingDriver.bufferGroup
            io_uring_sqe_set_data64(entry, URingDriver.tag(.receive, generation: generation, slot: slot))
        }
        toArm.removeAll(keepingCapacity: true)
    }

    /// Queues the cancellation of a socket's receive. Returns false when no receive was in
    /// flight (it was still waiting to be armed), so there is nothing to wait for.
    func cancel(slot: Int, generation: UInt32) -> Bool {
        let waiting = toArm.count
        toArm.removeAll { $0.slot == slot && $0.generation == generation }
        if toArm.count < waiting { return false }
        let entry = nextSubmission()
        io_uring_prep_cancel64(entry, URingDriver.tag(.receive, generation: generation, slot: slot), 0)
        io_uring_sqe_set_data64(entry, URingDriver.tag(.cancel, generation: generation, slot: slot))
        return true
    }

    func armWake() {
        let entry = nextSubmission()
        io_uring_prep_read(entry, wakeDescriptor, wakeBuffer, 8, 0)
        io_uring_sqe_set_data64(entry, URingDriver.tag(.wake, slot: 0))
    }

    @inline(__always)
    func buffer(_ id: UInt16) -> UnsafeMutableRawPointer { buffers + Int(id) * bufferSize }

    /// Gives a buffer back to the kernel (visible after `commitRecycled`).
    @inline(__always)
    func recycle(_ id: UInt16) {
        io_uring_buf_ring_add(bufferRing, buffer(id), UInt32(bufferSize), id,
                              io_uring_buf_ring_mask(bufferCount), recycledSinceAdvance)
        recycledSinceAdvance += 1
    }

    func commitRecycled() {
        guard recycledSinceAdvance > 0 else { return }
        io_uring_buf_ring_advance(bufferRing, recycledSinceAdvance)
        recycledSinceAdvance = 0
    }

    /// Returns the buffers lent to the last turn's datagrams, whose sends have completed.
    func recycleHeld() {
        for index in 0..<heldCount { recycle(held[index]) }
        heldCount = 0
        commitRecycled()
    }

    func hold(_ id: UInt16) {
        held[heldCount] = id
        heldCount += 1
    }

    func pushStash(_ completion: Completion) {
        stash.append(completion)
    }

    func popStash() -> Completion {
        let completion = stash[stashHead]
        stashHead += 1
        if stashHead == stash.count {
            stash.removeAll(keepingCapacity: true)
            stashHead = 0
        } else if stashHead >= 1024 && stashHead * 2 >= stash.count {
            // Drop the consumed front now and then, so the array does not creep.
            stash.removeFirst(stashHead)
            stashHead = 0
        }
        return completion
    }

    func takeSyscalls() -> UInt64 {
        defer { syscalls = 0 }
        return syscalls
    }
}
