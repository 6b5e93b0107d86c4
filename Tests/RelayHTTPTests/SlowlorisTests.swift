import Foundation
import RelayHTTP
import XCTest

/// The control plane under a slowloris crowd: 100 clients that each send one header byte per
/// second against a 64-connection cap. Before connections waiting on an incomplete request
/// gave way to newcomers, 75-90% of /healthz polls got 503, and a liveness probe would have
/// restarted a healthy relay.
final class SlowlorisTests: XCTestCase {
    func testHealthChecksAndAPIKeepWorkingUnderOneHundredSlowClients() throws {
        // A head deadline of one second (three by default) keeps the test short; the crowd
        // still outnumbers the cap and churns all the time.
        let server = try startServer(limits: HTTPLimits(headTimeout: 1, maxConnections: 64), priorityPaths: ["/healthz"])
        let crowd = SlowlorisCrowd(port: server.boundPort, count: 100)
        defer { crowd.stop() }
        // Poll only once the crowd holds every slot the server has: asked of the server, not
        // guessed from a sleep.
        let deadline = Date().addingTimeInterval(20)
        while server.servedConnections < 64 && Date() < deadline { usleep(10_000) }
        XCTAssertEqual(server.servedConnections, 64, "the crowd never filled the cap of 64")

        var healthy = 0
        var failures: [String] = []
        var apiFailures: [String] = []
        var api: RawClient?
        let polls = 40
        for poll in 0..<polls {
            do {
                let probe = try RawClient(port: server.boundPort, receiveTimeout: 5)
                try probe.send("GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                let response = try probe.readResponse()
                if response?.status == 200 { healthy += 1 } else { failures.append("\(response?.status ?? 0) \(response?.text ?? "closed")") }
            } catch {
                failures.append("\(error)")
            }
            // A normal client on one keep-alive connection: every call is answered.
            if poll % 4 == 0 {
                do {
                    if api == nil { api = try RawClient(port: server.boundPort, receiveTimeout: 5) }
                    try api!.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello")
                    let echoed = try api!.readResponse()
                    if echoed?.status != 200 || echoed?.text != "hello" {
                        apiFailures.append("\(echoed?.status ?? 0) \(echoed?.text ?? "closed")")
                        api = nil
                    }
                } catch {
                    apiFailures.append("\(error)")
                    api = nil
                }
            }
            usleep(50_000)
        }
        XCTAssertEqual(apiFailures, [], "the normal client's calls failed")
        XCTAssertGreaterThanOrEqual(crowd.reconnects.load(ordering: .relaxed), 36, "the crowd never exceeded the cap")
        XCTAssertGreaterThanOrEqual(Double(healthy) / Double(polls), 0.95, "failed polls: \(failures)")
    }
}
