@testable import ClientSockets
import SystemSupport
import Glibc
import TestSupport
import XCTest
@testable import LoadGen

final class DatagramIOTests: XCTestCase {
    func testControlMessageWalkFindsTOSAfterOtherMessages() {
        // [SOL_SOCKET/SO_TIMESTAMP 16+16] [IPPROTO_IP/IP_TOS 16+1 padded to 24]
        var bytes = [UInt8](repeating: 0, count: 64)
        bytes.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: UInt(32), toByteOffset: 0, as: UInt.self)
            raw.storeBytes(of: SOL_SOCKET, toByteOffset: 8, as: Int32.self)
            raw.storeBytes(of: Int32(SO_TIMESTAMP), toByteOffset: 12, as: Int32.self)
            raw.storeBytes(of: UInt(17), toByteOffset: 32, as: UInt.self)
            raw.storeBytes(of: Int32(IPPROTO_IP), toByteOffset: 40, as: Int32.self)
            raw.storeBytes(of: Int32(IP_TOS), toByteOffset: 44, as: Int32.self)
            raw.storeBytes(of: UInt8(0xBA), toByteOffset: 48, as: UInt8.self)
        }
        XCTAssertEqual(bytes.withUnsafeBytes { ControlMessages.tos(in: $0.baseAddress!, length: 56) }, 0xBA)
        XCTAssertNil(bytes.withUnsafeBytes { ControlMessages.tos(in: $0.baseAddress!, length: 40) }, "TOS message cut off")
        XCTAssertNil(bytes.withUnsafeBytes { ControlMessages.tos(in: $0.baseAddress!, length: 0) })
        // IPv6 traffic class is an int.
        var v6 = [UInt8](repeating: 0, count: 24)
        v6.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: UInt(20), toByteOffset: 0, as: UInt.self)
            raw.storeBytes(of: Int32(IPPROTO_IPV6), toByteOffset: 8, as: Int32.self)
            raw.storeBytes(of: Int32(IPV6_TCLASS), toByteOffset: 12, as: Int32.self)
            raw.storeBytes(of: Int32(0x8A), toByteOffset: 16, as: Int32.self)
        }
        XCTAssertEqual(v6.withUnsafeBytes { ControlMessages.tos(in: $0.baseAddress!, length: 24) }, 0x8A)
        // A zero cmsg_len must not loop forever.
        XCTAssertNil([UInt8](repeating: 0, count: 32).withUnsafeBytes { ControlMessages.tos(in: $0.baseAddress!, length: 32) })
    }

    /// Sender GSO: consecutive 1200-byte datagrams to one destination share one message (a
    /// frame, at most `segments` of them) that the kernel cuts into datagrams again.
    func testSenderGSOSendsAFrameAsOneMessage() throws {
        let tos: UInt8 = 34 << 2 | 2
        let first = try TrafficSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0), tos: 0)
        let second = try TrafficSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0), tos: 0)
        let sender = try TrafficSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0), tos: tos)
        XCTAssertTrue(sender.acceptsGSO(), "UDP GSO is in every kernel since 4.18")
        let batch = SendBatch(capacity: 8, bufferSize: 1200, segments: 7)
        var sequence: UInt64 = 0
        for (destination, frames) in [(first, 2), (second, 1)] {
            for _ in 0..<(frames * 7) {
                batch.append(fd: sender.fd, to: destination.localAddress,
                             header: PayloadHeader(stream: 1, sequence: sequence, sendTime: MonotonicClock.now(), tos: tos), size: 1200)
                sequence += 1
            }
        }
        XCTAssertEqual(batch.count, 3, "one message per frame")
        XCTAssertEqual(batch.flush(), 21, "datagrams, not messages")
        let incoming = ReceiveBatch(capacity: 32, bufferSize: 2048)
        for (socket, expected) in [(first, Array(0..<14) as [UInt64]), (second, Array(14..<21) as [UInt64])] {
            var got: [(UInt64, Int, UInt8)] = []
            for _ in 0..<200 where got.count < expected.count {
                var p = pollfd(fd: socket.fd, events: Int16(POLLIN), revents: 0)
                _ = poll(&p, 1, 20)
                let n = incoming.receive(from: socket.fd)
                for i in 0..<n {
                    got.append((try XCTUnwrap(PayloadHeader.decode(incoming.payload(i), length: incoming.length(i))).sequence,
                                incoming.length(i), incoming.tos(i)))
                }
            }
            XCTAssertEqual(got.map(\.0), expected)
            XCTAssertEqual(Set(got.map(\.1)), [1200], "cut into 1200-byte datagrams")
            XCTAssertEqual(Set(got.map(\.2)), [tos])
        }
    }

    /// sendmmsg and recvmmsg over loopback, with the TOS byte read back from the cmsg.
    func roundTrip(host: String) throws {
        let tos: UInt8 = 46 << 2 | 2
        let receiver = try TrafficSocket(bindTo: SocketAddress(host: host, port: 0), tos: 0)
        let sender = try TrafficSocket(bindTo: SocketAddress(host: host, port: 0), tos: tos)
        let batch = SendBatch(capacity: 8, bufferSize: 300)
        for seq in 0..<5 as Range<UInt64> {
            batch.append(fd: sender.fd, to: receiver.localAddress,
                         header: PayloadHeader(stream: 3, sequence: seq, sendTime: MonotonicClock.now(), tos: tos), size: 100 + Int(seq))
        }
        XCTAssertEqual(batch.flush(), 5)
        let incoming = ReceiveBatch(capacity: 16, bufferSize: 2048)
        var got: [(PayloadHeader, Int, UInt8)] = []
        for _ in 0..<100 where got.count < 5 {
            var p = pollfd(fd: receiver.fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&p, 1, 20)
            let n = incoming.receive(from: receiver.fd)
            for i in 0..<n {
                got.append((try XCTUnwrap(PayloadHeader.decode(incoming.payload(i), length: incoming.length(i))), incoming.length(i), incoming.tos(i)))
                XCTAssertEqual(incoming.source(i).port, sender.localAddress.port)
            }
        }
        XCTAssertEqual(got.map(\.0.sequence), [0, 1, 2, 3, 4])
        XCTAssertEqual(got.map(\.1), [100, 101, 102, 103, 104])
        XCTAssertEqual(got.map(\.2), [UInt8](repeating: tos, count: 5), "TOS set by IP_TOS/IPV6_TCLASS, read from the cmsg")
    }

    func testIPv4RoundTripKeepsTOS() throws { try roundTrip(host: "127.0.0.1") }

    func testIPv6RoundTripKeepsTrafficClass() throws {
        try IPv6Loopback.require()
        try roundTrip(host: "::1")
    }
}

extension DatagramIOTests {
    /// compare --pin relay ends latency at the kernel's stamp of each arrival: a socket that
    /// asks for stamps gets one per datagram, on the wall clock, between the send and the read,
    /// beside its TOS byte; one that does not ask gets none.
    func testArrivalStampsComeWithEachDatagram() throws {
        let stamped = try TrafficSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0), tos: 0)
        let plain = try TrafficSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0), tos: 0)
        let sender = try TrafficSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0), tos: 0xB8)
        XCTAssertTrue(stamped.stampArrivals())
        let sentAfter = MonotonicClock.now() &+ MonotonicClock.realtimeOffset()
        let batch = SendBatch(capacity: 4, bufferSize: 200, segments: 1)
        for (i, destination) in [stamped, stamped, plain].enumerated() {
            batch.append(fd: sender.fd, to: destination.localAddress,
                         header: PayloadHeader(stream: 0, sequence: UInt64(i), sendTime: MonotonicClock.now(), tos: 0xB8), size: 200)
        }
        XCTAssertEqual(batch.flush(), 3)
        let incoming = ReceiveBatch(capacity: 4, bufferSize: 2048)
        for (socket, count, stamps) in [(stamped, 2, true), (plain, 1, false)] {
            var p = pollfd(fd: socket.fd, events: Int16(POLLIN), revents: 0)
            XCTAssertEqual(poll(&p, 1, 2000), 1)
            XCTAssertEqual(incoming.receive(from: socket.fd), count, "loopback queued them during the send")
            let readBefore = MonotonicClock.now() &+ MonotonicClock.realtimeOffset()
            for i in 0..<count {
                XCTAssertEqual(incoming.tos(i), 0xB8, "the TOS byte's message beside the stamp")
                guard stamps else {
                    XCTAssertNil(incoming.arrival(i))
                    continue
                }
                let arrival = try XCTUnwrap(incoming.arrival(i))
                XCTAssertGreaterThanOrEqual(arrival, sentAfter)
                XCTAssertLessThanOrEqual(arrival, readBefore)
            }
        }
    }
}
