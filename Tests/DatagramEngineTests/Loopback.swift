import Glibc
import NetAddress
import XCTest
@testable import DatagramEngine

/// Real sockets on loopback for the engine tests.
enum Loopback {
    static let v4 = Endpoint(host: "127.0.0.1", port: 0)!
    static let v6 = Endpoint(host: "::1", port: 0)!
    static let dualStack = Endpoint(host: "::", port: 0)!
    static let wildcardV4 = Endpoint(host: "0.0.0.0", port: 0)!
    // Whether the host has ::1 at all: IPv6Loopback (TestSupport), probed without the engine.

    /// Sends one datagram with a plain sendto, outside any engine.
    static func send(from socket: UDPSocket, to destination: Endpoint, bytes: [UInt8]) {
        var storage = sockaddr_storage()
        let length = destination.write(to: &storage, family: socket.family)
        let sent = bytes.withUnsafeBytes { raw in
            withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(socket.descriptor, raw.baseAddress, raw.count, 0, $0, length)
                }
            }
        }
        precondition(sent == bytes.count, "sendto failed: \(errno)")
    }

    /// Receives one datagram with a plain recvmsg, outside any engine, waiting up to `seconds`:
    /// the address it came from, its TOS byte (the socket asks for it: `UDPSocket`) and its
    /// bytes; nil when none came.
    static func receive(on socket: UDPSocket, seconds: Double = 2) -> (source: Endpoint, trafficClass: TrafficClass, bytes: [UInt8])? {
        var pending = pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&pending, 1, Int32(seconds * 1000)) == 1 else { return nil }
        var storage = sockaddr_storage()
        var bytes = [UInt8](repeating: 0, count: 2048)
        var control = [UInt8](repeating: 0, count: ReceiveMetadata.capacity)
        return bytes.withUnsafeMutableBytes { raw in
            control.withUnsafeMutableBytes { controlBytes in
                withUnsafeMutablePointer(to: &storage) { name in
                    var iov = iovec(iov_base: raw.baseAddress, iov_len: raw.count)
                    return withUnsafeMutablePointer(to: &iov) { iovPointer in
                        var header = msghdr(msg_name: UnsafeMutableRawPointer(name), msg_namelen: socklen_t(MemoryLayout<sockaddr_storage>.size),
                                            msg_iov: iovPointer, msg_iovlen: 1, msg_control: controlBytes.baseAddress,
                                            msg_controllen: controlBytes.count, msg_flags: 0)
                        let count = recvmsg(socket.descriptor, &header, 0)
                        guard count >= 0, let source = Endpoint(reading: name, length: header.msg_namelen) else { return nil }
                        let metadata = ReceiveMetadata(control: header.msg_control, length: Int(header.msg_controllen))
                        return (source, TrafficClass(rawValue: metadata.trafficClass), Array(raw[0..<count]))
                    }
                }
            }
        }
    }

    /// Receives until `count` datagrams have arrived or `seconds` pass, calling `body` for each.
    static func drain(_ engine: DatagramEngine, count: Int, seconds: Double = 5,
                      _ body: (ReceivedDatagram) -> Void = { _ in }) -> Int {
        var got = 0
        let deadline = Date().addingTimeInterval(seconds)
        while got < count && Date() < deadline {
            let n = engine.receive(timeoutMilliseconds: 50)
            for index in 0..<n { body(engine.received(index)) }
            got += n
        }
        return got
    }
}

/// The datagrams of a conformance run: sizes 0 to 1472 and every TOS byte, with contents that
/// say which datagram they are. Size and TOS change every `run` datagrams: a run longer than
/// one gives GSO equal datagrams of one marking to merge.
struct Pattern {
    let count: Int
    let run: Int
    let storage: UnsafeMutableRawBufferPointer
    static let maxSize = 1472

    init(count: Int, run: Int = 1) {
        self.count = count
        self.run = run
        storage = .allocate(byteCount: count * Pattern.maxSize, alignment: 8)
        for index in 0..<count {
            for offset in 0..<size(index) { storage[index * Pattern.maxSize + offset] = byte(index, offset) }
        }
    }

    func free() { storage.deallocate() }

    func size(_ index: Int) -> Int { (index / run * 7919) % (Pattern.maxSize + 1) }
    func trafficClass(_ index: Int) -> TrafficClass { TrafficClass(rawValue: UInt8(truncatingIfNeeded: index / run * 37)) }
    func byte(_ index: Int, _ offset: Int) -> UInt8 { UInt8(truncatingIfNeeded: index &* 31 &+ offset &* 7) }

    func bytes(_ index: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: storage[(index * Pattern.maxSize)..<(index * Pattern.maxSize + size(index))])
    }

    func matches(_ index: Int, _ datagram: ReceivedDatagram) -> Bool {
        guard datagram.bytes.count == size(index), datagram.trafficClass == trafficClass(index) else { return false }
        return size(index) == 0 || memcmp(datagram.bytes.baseAddress!, bytes(index).baseAddress!, size(index)) == 0
    }
}
