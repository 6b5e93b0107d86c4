import Glibc
import CURing
import NetAddress

/// The preallocated vectors a batch of sends is built in: one iovec per outgoing datagram and,
/// per message, an mmsghdr, a destination address and control space. Allocated once and never
/// moved (io_uring keeps a message's address until its send completes); every flush re-points
/// them at the datagrams of that flush. The pointers stay in here: a backend asks for
/// `header(at:)` or `headers(from:)` and hands them to the kernel.
///
/// Building merges runs of datagrams into one UDP GSO message when the socket allows it and
/// the run shares socket, destination, TOS byte and size; a shorter datagram may end a run, as
/// the kernel allows (so a UDP GRO buffer whose last segment is short passes through as one
/// send). A change of TOS byte never splits the batch: each message carries its own TOS cmsg.
final class SendVectors {
    /// What one built message stands for.
    struct Message {
        var slot: Int32
        /// The socket's descriptor, read with its entry when the message was built: the
        /// backend sends without looking the socket up again.
        var descriptor: Int32
        var firstDatagram: Int32
        var segments: Int32
        var segmentSize: Int32
        /// Payload bytes of all segments (the last may be shorter than `segmentSize`).
        var bytes: Int32
        var trafficClass: UInt8

        /// The payload length of segment `segment`.
        func length(ofSegment segment: Int) -> Int {
            segment < Int(segments) - 1 ? Int(segmentSize) : Int(bytes) - (Int(segments) - 1) * Int(segmentSize)
        }
    }

    /// At most this many segments per GSO send (the kernel's UDP_MAX_SEGMENTS).
    static let maxSegments = 64
    /// And at most this many payload bytes per GSO send, to stay under the 64 KiB IP limit.
    static let maxGSOBytes = 65_000

    let capacity: Int
    private let headers: UnsafeMutablePointer<mr_mmsghdr>
    private let iovecs: UnsafeMutablePointer<iovec>
    private let addresses: UnsafeMutablePointer<sockaddr_storage>
    private let control: UnsafeMutableRawPointer
    private let messages: UnsafeMutablePointer<Message>
    @exclusivity(unchecked) private(set) var count = 0

    init(capacity: Int) {
        self.capacity = capacity
        headers = .allocate(capacity: capacity)
        headers.initialize(repeating: mr_mmsghdr(), count: capacity)
        iovecs = .allocate(capacity: capacity)
        iovecs.initialize(repeating: iovec(), count: capacity)
        addresses = .allocate(capacity: capacity)
        addresses.initialize(repeating: sockaddr_storage(), count: capacity)
        control = .allocate(byteCount: capacity * SendMetadata.capacity, alignment: 16)
        messages = .allocate(capacity: capacity)
        messages.initialize(repeating: Message(slot: 0, descriptor: -1, firstDatagram: 0, segments: 0, segmentSize: 0, bytes: 0, trafficClass: 0),
                            count: capacity)
    }

    deinit {
        headers.deallocate()
        iovecs.deallocate()
        addresses.deallocate()
        control.deallocate()
        messages.deallocate()
    }

    @inline(__always)
    func message(_ index: Int) -> Message { messages[index] }

    /// The msghdr of message `index`, for sendmsg or an io_uring SENDMSG: it stays where it is
    /// until the next `build`.
    @inline(__always)
    func header(at index: Int) -> UnsafeMutablePointer<msghdr> {
        UnsafeMutableRawPointer(headers + index).assumingMemoryBound(to: msghdr.self)
    }

    /// Messages `index...` as the mmsghdr vector sendmmsg takes.
    @inline(__always)
    func headers(from index: Int) -> UnsafeMutablePointer<mr_mmsghdr> { headers + index }

    /// Builds messages for `datagrams[0..<count]`. Datagrams whose socket is gone or whose
    /// destination the socket cannot reach are reported through `unsendable` and skipped.
    ///
    /// Consecutive datagrams mostly share socket, destination and marking (a flow, or a
    /// sender's datagrams to one peer), so each message reuses what the one before it wrote when
    /// it can: the socket's table entry, the destination address, the control bytes. A message
    /// then costs its iovecs, its header and its record. Shared address and control space is
    /// never written again until the next build (`unmerge` only shortens a header's control
    /// length), so a message the kernel has not yet read (io_uring) still points at its bytes.
    func build(_ datagrams: UnsafeMutablePointer<OutgoingDatagram>, count total: Int, table: SocketTable,
               gso: Bool, unsendable: (Int32, Int) -> Void) {
        // Per datagram this is the packet path's largest piece of user-space work, so it is
        // written for the compiler: fields read through the pointer (not a copy of each
        // datagram), wrapping arithmetic on counts bounded by `capacity`, and few live values.
        // The vectors' bases in locals: a store through one pointer could alias this object's
        // fields as far as the compiler knows, so it would load them again after every store.
        let (headers, iovecs, messages, addresses, control) = (self.headers, self.iovecs, self.messages, self.addresses, self.control)
        var built = 0
        var socket = SocketID(slot: -1, generation: 0)
        var slot: Int32 = 0
        var descriptor: Int32 = -1
        var ipv4Socket = false
        var gsoSocket = false
        // The address written last (nil for none), for which destination and socket family.
        var name: UnsafeMutableRawPointer?
        var nameDestination = Endpoint(high: 0, low: 0, port: 0)
        var nameIPv4 = false
        var nameLength: socklen_t = 0
        // The control bytes written last (nil for none) and what they encode: IPv4 or IPv6 TOS
        // cmsg, TOS byte, GSO segment size.
        var controlSpace: UnsafeMutableRawPointer?
        var controlKey: UInt32 = 0
        var controlLength = 0
        var index = 0
        while index < total {
            let datagram = datagrams + index
            if datagram.pointee.socket != socket {
                // The send path's one lookup of a socket, for a run of its datagrams. A stream
                // or a listener is not a destination: a datagram sent on a connected TCP socket
                // would join its byte stream and break the framing.
                guard let entry = table.entry(datagram.pointee.socket), entry.kind == .datagram else {
                    unsendable(EBADF, 1)
                    index &+= 1
                    continue
                }
                socket = datagram.pointee.socket
                slot = socket.slot
                descriptor = entry.descriptor
                ipv4Socket = entry.ipv4
                gsoSocket = gso && entry.gsoEnabled
            }
            let size = datagram.pointee.bytes.count
            let trafficClass = datagram.pointee.trafficClass.rawValue
            iovecs[index] = iovec(iov_base: UnsafeMutableRawPointer(mutating: datagram.pointee.bytes.baseAddress), iov_len: size)
            var segments = 1
            var bytes = size
            if gsoSocket && size > 0 {
                (segments, bytes) = mergeRun(datagrams, from: index, count: total)
            }
            let destination = datagram.pointee.destination
            if name == nil || destination != nameDestination || ipv4Socket != nameIPv4 {
                let length = destination.write(to: addresses + built, family: ipv4Socket ? Int32(AF_INET) : Int32(AF_INET6))
                if length == 0 {
                    unsendable(EAFNOSUPPORT, segments)
                    index &+= segments
                    continue
                }
                name = UnsafeMutableRawPointer(addresses + built)
                nameDestination = destination
                nameIPv4 = ipv4Socket
                nameLength = length
            }
            let segmentSize = segments > 1 ? UInt16(truncatingIfNeeded: size) : 0
            let ipv4 = ipv4Socket || destination.isIPv4
            let key = UInt32(segmentSize) << 16 | UInt32(trafficClass) << 1 | (ipv4 ? 1 : 0)
            if controlSpace == nil || key != controlKey {
                let space = control + built &* SendMetadata.capacity
                controlLength = SendMetadata.write(into: space, ipv4: ipv4, trafficClass: trafficClass, segmentSize: segmentSize)
                controlSpace = space
                controlKey = key
            }
            // msg_flags and msg_len stay as zeroed at allocation: a send reads neither (sendmmsg
            // writes msg_len, which nothing here reads back).
            let header = UnsafeMutableRawPointer(headers + built).assumingMemoryBound(to: msghdr.self)
            header.pointee.msg_name = name
            header.pointee.msg_namelen = nameLength
            header.pointee.msg_iov = iovecs + index
            header.pointee.msg_iovlen = segments
            header.pointee.msg_control = controlSpace
            header.pointee.msg_controllen = controlLength
            messages[built] = Message(slot: slot, descriptor: descriptor, firstDatagram: Int32(truncatingIfNeeded: index),
                                      segments: Int32(truncatingIfNeeded: segments), segmentSize: Int32(truncatingIfNeeded: size),
                                      bytes: Int32(truncatingIfNeeded: bytes), trafficClass: trafficClass)
            built &+= 1
            index &+= segments
        }
        count = built
    }

    /// How many datagrams from `first` on join it in one GSO send, with their payload bytes,
    /// their iovecs filled in (the first's is already): same socket, destination and TOS byte,
    /// and the same size but for a shorter last one, as the kernel allows. Up to `maxSegments`
    /// and `maxGSOBytes`. Out of line, so that the plain path keeps its registers.
    @inline(never)
    private func mergeRun(_ datagrams: UnsafeMutablePointer<OutgoingDatagram>, from first: Int, count total: Int) -> (Int, Int) {
        let iovecs = self.iovecs
        let head = datagrams + first
        let size = head.pointee.bytes.count
        let limit = min(total &- first, SendVectors.maxSegments, SendVectors.maxGSOBytes / size)
        var segments = 1
        var bytes = size
        while segments < limit {
            let next = head + segments
            let length = next.pointee.bytes.count
            guard length == size || (length > 0 && length < size), next.pointee.socket == head.pointee.socket,
                  next.pointee.trafficClass == head.pointee.trafficClass,
                  next.pointee.destination == head.pointee.destination else { break }
            iovecs[first &+ segments] = iovec(iov_base: UnsafeMutableRawPointer(mutating: next.pointee.bytes.baseAddress), iov_len: length)
            segments &+= 1
            bytes &+= length
            // Only the last segment of a GSO send may be shorter.
            if length < size { break }
        }
        return (segments, bytes)
    }

    /// Turns GSO message `index` into a plain one for its first segment: one iovec, and the
    /// control length cut to the TOS cmsg, which `SendMetadata.write` puts first, so the
    /// segment-size cmsg after it is left out. Nothing is rewritten: the control bytes may be
    /// shared with other messages of this build. `pointAt(segment:of:)` then walks the message
    /// over the other segments.
    func unmerge(_ index: Int) {
        let header = header(at: index)
        header.pointee.msg_controllen = SendMetadata.trafficClassLength
        header.pointee.msg_iovlen = 1
    }

    /// Points the (unmerged) message `index` at its `segment`th datagram.
    func pointAt(segment: Int, of index: Int) {
        header(at: index).pointee.msg_iov = iovecs + Int(messages[index].firstDatagram) + segment
    }
}
