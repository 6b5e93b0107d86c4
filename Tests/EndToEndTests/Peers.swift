import DatagramEngine
import Foundation
import enum LoadGen.ControlMessages
import struct LoadGen.SocketAddress
import XCTest

/// Test peers: real UDP sockets on loopback. They send through one engine (each datagram's TOS
/// byte set per send) and receive without it, so each mark on the wire is read independently.
final class Peers {
    let engine: DatagramEngine
    private var sockets: [UDPSocket] = []
    private var ids: [SocketID] = []

    struct Arrival {
        let peer: Int
        let source: Endpoint
        let trafficClass: TrafficClass
        let bytes: [UInt8]
    }

    init(count: Int, family: Endpoint = Endpoint(host: "127.0.0.1", port: 0)!) throws {
        engine = try DatagramEngine(configuration: EngineConfiguration(backend: .mmsg, gso: false))
        for _ in 0..<count {
            let socket = try UDPSocket(binding: family)
            sockets.append(socket)
            ids.append(try engine.register(socket))
        }
    }

    func address(_ peer: Int) -> Endpoint { sockets[peer].localEndpoint }

    func send(from peer: Int, to destination: Endpoint, _ bytes: [UInt8], trafficClass: TrafficClass = TrafficClass(rawValue: 0)) {
        bytes.withUnsafeBytes { raw in
            engine.enqueue(socket: ids[peer], to: destination, trafficClass: trafficClass, bytes: raw)
            engine.flush()
        }
    }

    /// What arrives within `seconds` (stopping early once `expected` have come). Received with
    /// plain recvmsg and the load generator's own control-message reader, not through the
    /// engine: the marks the relay sent are read by code that shares nothing with the relay's.
    func collect(expected: Int = .max, seconds: Double = 2) -> [Arrival] {
        var arrivals: [Arrival] = []
        let deadline = Date().addingTimeInterval(seconds)
        var polls = sockets.map { pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) }
        while arrivals.count < expected && Date() < deadline {
            guard poll(&polls, nfds_t(polls.count), 20) > 0 else { continue }
            for peer in polls.indices where polls[peer].revents != 0 {
                while let arrival = receive(peer) { arrivals.append(arrival) }
            }
        }
        return arrivals
    }

    /// One datagram waiting on `peer`'s socket, or nil when none is.
    private func receive(_ peer: Int) -> Arrival? {
        var payload = [UInt8](repeating: 0, count: 2048)
        var control = [UInt8](repeating: 0, count: 64)
        var source = SocketAddress()
        let received: (length: Int, tos: UInt8)? = payload.withUnsafeMutableBytes { payload in
            control.withUnsafeMutableBytes { control in
                withUnsafeMutablePointer(to: &source.storage) { name in
                    var vector = iovec(iov_base: payload.baseAddress, iov_len: payload.count)
                    return withUnsafeMutablePointer(to: &vector) { vector in
                        var header = msghdr(msg_name: UnsafeMutableRawPointer(name),
                                            msg_namelen: socklen_t(MemoryLayout<sockaddr_storage>.size),
                                            msg_iov: vector, msg_iovlen: 1, msg_control: control.baseAddress,
                                            msg_controllen: control.count, msg_flags: 0)
                        let length = recvmsg(sockets[peer].descriptor, &header, Int32(MSG_DONTWAIT))
                        guard length >= 0 else { return nil }
                        source.length = header.msg_namelen
                        let tos = ControlMessages.tos(in: control.baseAddress!, length: Int(header.msg_controllen)) ?? 0
                        return (length, tos)
                    }
                }
            }
        }
        guard let received, let from = Endpoint(host: source.host, port: source.port) else { return nil }
        return Arrival(peer: peer, source: from, trafficClass: TrafficClass(rawValue: received.tos),
                       bytes: Array(payload[0..<received.length]))
    }
}
