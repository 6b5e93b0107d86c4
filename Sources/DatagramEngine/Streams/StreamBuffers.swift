import Glibc
import SystemSupport

/// The byte buffers of every stream an engine may hold, in one region reserved at start-up:
/// per stream index an input buffer of `inputCapacity` bytes and an output ring of
/// `outputCapacity`. Fixed per-connection buffers rather than an io_uring provided-buffer group
/// for streams: the owner consumes a stream's input in its own time (a framer keeps a partial
/// message until the rest comes), so received bytes must stay in a contiguous buffer of that
/// connection anyway; with a shared group they would be copied there, or a slow owner would
/// hold the group's buffers and starve every other connection. Here the kernel writes straight
/// into the connection's free space (one receive in flight per stream), a full input buffer
/// simply means no receive is armed (backpressure), and no connection can take another's
/// memory. The region is reserved with MAP_NORESERVE, so pages cost memory only once a
/// connection has used them, and never more than `streamLimit` connections' worth; each
/// stream's part starts on a page of its own, and its pages go back to the kernel when the
/// stream is released (`release`), so memory follows the connections open now, not the most
/// a flood ever reached on whichever indices it landed.
///
/// Lifetimes: the region lives as long as this object; whoever hands its pointers to the
/// kernel (the io_uring backend) keeps this object alive until the ring is gone. A stream's
/// buffers belong to its index from `StreamTable.open` to its release; the bytes `input`
/// returns stay where they are until the owner's next `consume` or the next turn.
final class StreamBuffers {
    let inputCapacity: Int
    let outputCapacity: Int
    private let stride: Int
    private let region: UnsafeMutableRawPointer
    private let regionBytes: Int

    init(streams: Int, inputCapacity: Int, outputCapacity: Int) throws(SystemCallError) {
        precondition(streams > 0 && inputCapacity > 0 && outputCapacity > 0)
        self.inputCapacity = inputCapacity
        self.outputCapacity = outputCapacity
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        stride = (inputCapacity + outputCapacity + page - 1) / page * page
        regionBytes = streams * stride
        let mapped = mmap(nil, regionBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
        guard let mapped, mapped != MAP_FAILED else {
            throw SystemCallError("mmap of \(regionBytes) bytes for stream buffers", errno: errno,
                                  advice: "lower streamLimit or the stream buffer sizes")
        }
        region = mapped
    }

    deinit { munmap(region, regionBytes) }

    /// Gives the pages of `stream`'s buffers back to the kernel (MADV_DONTNEED: the next use
    /// finds zeroed pages, so nothing of the old connection stays either). Only for a stream
    /// released, when no system call or io_uring operation can still touch its buffers.
    func release(_ stream: Int) {
        SystemCall.ignoringFailure { Int(madvise(region + stream * stride, stride, MADV_DONTNEED)) }
    }

    private func input(_ stream: Int) -> UnsafeMutableRawPointer { region + stream * stride }
    private func output(_ stream: Int) -> UnsafeMutableRawPointer { region + stream * stride + inputCapacity }

    /// The bytes received and not consumed, contiguous.
    func input(_ stream: Int, _ cursors: StreamCursors) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: input(stream) + Int(cursors.inputStart), count: cursors.inputCount)
    }

    /// Where the next receive may write: the free space after the input. First moves the
    /// unconsumed bytes to the front when that gains room, so the space is as large as it can
    /// be; only call it while no receive is writing into this buffer.
    func receiveSpace(_ stream: Int, _ cursors: inout StreamCursors) -> UnsafeMutableRawBufferPointer {
        if cursors.inputStart > 0 {
            let count = cursors.inputCount
            if count > 0 { memmove(input(stream), input(stream) + Int(cursors.inputStart), count) }
            cursors.inputStart = 0
            cursors.inputEnd = Int32(count)
        }
        return UnsafeMutableRawBufferPointer(start: input(stream) + Int(cursors.inputEnd), count: inputCapacity - Int(cursors.inputEnd))
    }

    /// Copies `bytes` to the end of the output ring; the caller has checked that they fit.
    func append(_ stream: Int, _ cursors: inout StreamCursors, _ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        let tail = (Int(cursors.outputHead) + Int(cursors.outputCount)) % outputCapacity
        let first = min(bytes.count, outputCapacity - tail)
        memcpy(output(stream) + tail, source, first)
        if first < bytes.count { memcpy(output(stream), source + first, bytes.count - first) }
        cursors.outputCount += Int32(bytes.count)
    }

    /// The pending output from its oldest byte up to the ring's end: what one send takes. It
    /// stays in place until `StreamCursors.sent` says the kernel has it.
    func pendingChunk(_ stream: Int, _ cursors: StreamCursors) -> UnsafeRawBufferPointer {
        let count = min(Int(cursors.outputCount), outputCapacity - Int(cursors.outputHead))
        return UnsafeRawBufferPointer(start: output(stream) + Int(cursors.outputHead), count: count)
    }
}

/// Where a stream's bytes are in its buffers: plain integers, kept in the stream's state. The
/// input is `inputStart..<inputEnd` of the input buffer; the output ring holds `outputCount`
/// bytes from `outputHead` on, wrapping at its capacity.
struct StreamCursors {
    var inputStart: Int32 = 0
    var inputEnd: Int32 = 0
    var outputHead: Int32 = 0
    var outputCount: Int32 = 0

    var inputCount: Int { Int(inputEnd - inputStart) }

    mutating func consumed(_ count: Int) {
        inputStart += Int32(count)
    }

    mutating func received(_ count: Int) {
        inputEnd += Int32(count)
    }

    /// The kernel took `count` bytes from the front of the output ring.
    mutating func sent(_ count: Int, capacity: Int) {
        outputHead = Int32((Int(outputHead) + count) % capacity)
        outputCount -= Int32(count)
        if outputCount == 0 { outputHead = 0 }
    }
}
