import Foundation
import LoadGen
import NetAddress
import STUN
import TestSupport
import XCTest

/// Issue 32's pipelined requests, through the real executable: Binding requests in one write,
/// over TCP and over TLS, each get their answer, however far the answers run ahead of what the
/// client has read. An answer refused for want of output room would leave its client waiting
/// for a transaction timeout (39.5 s): the relay must read no further instead, until the
/// client has read enough for the next answer.
final class TurnStreamPipelinedRequestsTests: XCTestCase {
    func testThreeThousandPipelinedBindingsAreAllAnsweredOverTCPAndTLS() throws {
        let server = try TurnStreamServerFixture()
        for tls in [false, true] {
            let client = try StreamTurnClient(to: Endpoint(host: "127.0.0.1", port: tls ? server.tlsPort : server.tcpPort)!,
                                              tls: tls ? try server.clientContext() : nil)
            var (requests, transactions) = Self.bindings(3_000)
            try client.writeAtOnce(requests)
            requests = []
            try expectAnswers(to: &transactions, from: client, server, tls ? "TLS" : "TCP")
        }
        XCTAssertEqual(server.relay.stop(), 0, server.relay.log)
    }

    /// 20,000 Bindings from a client that starts reading half a second after it wrote them,
    /// through a receive buffer of 4 KiB: their answers (640 KB over TCP, about 1 MB over TLS)
    /// are more than the relay's output and the kernel's buffers hold, so the relay must stop
    /// reading requests while the client does not read answers.
    func testTwentyThousandBindingsFromAClientThatReadsLateAreAllAnswered() throws {
        let server = try TurnStreamServerFixture()
        for tls in [false, true] {
            let client = try StreamTurnClient(to: Endpoint(host: "127.0.0.1", port: tls ? server.tlsPort : server.tcpPort)!,
                                              tls: tls ? try server.clientContext() : nil, receiveBufferBytes: 4096)
            let (requests, transactions) = Self.bindings(20_000)
            var waiting = transactions
            let written = try client.writeInBackground(requests)
            usleep(500_000)
            try expectAnswers(to: &waiting, from: client, server, tls ? "TLS read late" : "TCP read late")
            XCTAssertEqual(written.wait(timeout: .now() + 10), .success, "the requests were never all written")
        }
        XCTAssertEqual(server.relay.stop(), 0, server.relay.log)
    }

    /// Reads answers until every transaction in `waiting` has one, or none comes for 3 s.
    private func expectAnswers(to waiting: inout Set<[UInt8]>, from client: StreamTurnClient, _ server: TurnStreamServerFixture,
                               _ what: String) throws {
        let asked = waiting.count
        while !waiting.isEmpty, let message = client.readMessage(seconds: 3) {
            let answer = try StunMessage(bytes: message)
            XCTAssertEqual(answer.messageClass, .successResponse, "\(what): \(answer)")
            XCTAssertNotNil(waiting.remove(Array(message[8..<20])), "\(what): an answer to no request, or a second one")
        }
        let stats = try server.relay.stats()
        print("TurnStreamPipelinedRequestsTests \(what): \(asked - waiting.count) of \(asked) pipelined Bindings answered; "
              + "client_backpressure \(RelayProcess.number(stats, "turn", "drops", "client_backpressure") ?? 0)")
        XCTAssertEqual(waiting.count, 0, "\(what): \(waiting.count) of \(asked) requests never answered")
    }

    /// `count` Binding requests back to back, and their transaction IDs.
    static func bindings(_ count: Int) -> (bytes: [UInt8], transactions: Set<[UInt8]>) {
        var bytes: [UInt8] = []
        var transactions: Set<[UInt8]> = []
        for _ in 0..<count {
            let request = MessageBuilder(MessageType(.binding, .request), transactionID: .random()).bytes
            transactions.insert(Array(request[8..<20]))
            bytes += request
        }
        return (bytes, transactions)
    }
}
