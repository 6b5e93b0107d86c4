import Glibc
import SystemSupport

/// What becomes of a built message once the kernel has answered, the same for every backend:
/// counted as sent, counted as an error, or, when the kernel refused a GSO send, GSO turned off
/// for that socket and the message sent again one datagram at a time (the quinn-udp habit:
/// probe once, remember per socket, fall back), so no datagram is lost to the fallback.
extension EngineState {
    /// Records message `index` as taken by the kernel.
    @inline(__always)
    func sent(_ index: Int) {
        let message = sendVectors.message(index)
        let segments = UInt64(message.segments)
        counters.datagramsOut &+= segments
        counters.bytesOut &+= UInt64(message.bytes)
        counters.ecnOut[Int(message.trafficClass & 3)] &+= segments
        if message.segments > 1 {
            counters.gsoSegments &+= segments
            counters.gsoSends &+= 1
        }
    }

    /// Records message `index` as refused with `code`.
    func refused(_ index: Int, errno code: Int32) {
        let message = sendVectors.message(index)
        if message.segments > 1, code == EIO || code == EINVAL {
            resendWithoutGSO(index)
        } else {
            counters.sendErrors.add(code, UInt64(message.segments))
        }
    }

    /// Records messages `range` as refused, all for the same reason (a full socket buffer: the
    /// rest of a run would fail the same way, one system call each).
    func refused(_ range: Range<Int>, errno code: Int32) {
        for index in range { counters.sendErrors.add(code, UInt64(sendVectors.message(index).segments)) }
    }

    private func resendWithoutGSO(_ index: Int) {
        let message = sendVectors.message(index)
        let slot = Int(message.slot)
        // One socket, one fallback: the other GSO runs of the same flush are refused as well.
        if table[slot].gsoEnabled { counters.gsoFallbacks &+= 1 }
        table[slot].gsoEnabled = false
        sendVectors.unmerge(index)
        let descriptor = table[slot].descriptor
        let header = sendVectors.header(at: index)
        for segment in 0..<Int(message.segments) {
            sendVectors.pointAt(segment: segment, of: index)
            counters.syscalls &+= 1
            switch SystemCall.ownOutcome("sendmsg", { sendmsg(descriptor, header, 0) }) {
            case .done: recordSingle(message, bytes: message.length(ofSegment: segment))
            case .wouldBlock: counters.sendErrors.add(EAGAIN)
            case .failed(let code): counters.sendErrors.add(code)
            }
        }
    }

    private func recordSingle(_ message: SendVectors.Message, bytes: Int) {
        counters.datagramsOut &+= 1
        counters.bytesOut &+= UInt64(bytes)
        counters.ecnOut[Int(message.trafficClass & 3)] &+= 1
    }
}
