import DatagramEngine
import Foundation
import NetAddress
import XCTest

/// Test peers: real UDP sockets on loopback driven by one engine, so each datagram's TOS byte
/// can be set on send and read on receipt.
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

    convenience init(count: Int, family: Endpoint = Endpoint(host: "127.0.0.1", port: 0)!, maxDatagramSize: Int = 2048) throws {
        try self.init(binding: Array(repeating: family, count: count), maxDatagramSize: maxDatagramSize)
    }

    /// One peer bound to each of `addresses`; throws when one of them is taken.
    init(binding addresses: [Endpoint], maxDatagramSize: Int = 2048) throws {
        engine = try DatagramEngine(configuration: EngineConfiguration(backend: .mmsg, gso: false, maxDatagramSize: maxDatagramSize))
        for address in addresses {
            let socket = try UDPSocket(binding: address)
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

    /// Sends every datagram in one flush, so that they reach the receiver back to back.
    func send(from peer: Int, to destination: Endpoint, batch: [([UInt8], TrafficClass)]) {
        batch.flatMap(\.0).withUnsafeBytes { joined in
            var offset = 0
            for (bytes, trafficClass) in batch {
                let slice = UnsafeRawBufferPointer(rebasing: joined[offset..<offset + bytes.count])
                engine.enqueue(socket: ids[peer], to: destination, trafficClass: trafficClass, bytes: slice)
                offset += bytes.count
            }
            engine.flush()
        }
    }

    /// What arrives within `seconds` (stopping early once `expected` arrivals that `counting`
    /// accepts have come). The default deadline is generous: it only bounds a failing test.
    func collect(expected: Int = .max, seconds: Double = 10, counting: (Arrival) -> Bool = { _ in true }) -> [Arrival] {
        var arrivals: [Arrival] = []
        var counted = 0
        let deadline = Date().addingTimeInterval(seconds)
        while counted < expected && Date() < deadline {
            let count = engine.receive(timeoutMilliseconds: 20)
            for index in 0..<count {
                let arrival = self.arrival(engine.received(index))
                arrivals.append(arrival)
                if counting(arrival) { counted += 1 }
            }
        }
        return arrivals
    }

    /// What is waiting right now, without waiting for more.
    func pending() -> [Arrival] {
        var arrivals: [Arrival] = []
        while true {
            let count = engine.receive(timeoutMilliseconds: 0)
            if count == 0 { return arrivals }
            for index in 0..<count { arrivals.append(arrival(engine.received(index))) }
        }
    }

    private func arrival(_ datagram: ReceivedDatagram) -> Arrival {
        Arrival(peer: ids.firstIndex(of: datagram.socket)!, source: datagram.source,
                trafficClass: datagram.trafficClass, bytes: Array(datagram.bytes))
    }
}
