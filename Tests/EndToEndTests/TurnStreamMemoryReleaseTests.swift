import ClientSockets
import Foundation
import Glibc
import STUN
import XCTest

/// Issue 32's "memory never given back", through the real executable: 3,000 connections fill
/// their input (a message announced and never finished; over TLS a ClientHello of the largest
/// size the relay accepts announced and never finished) and reset, twice, the second time on other connection slots (the first
/// ones held by idle connections meanwhile). Each time the relay's resident memory must grow
/// with the flood and fall back within 10% of where it started once the connections are gone.
final class TurnStreamMemoryReleaseTests: XCTestCase {
    private static let connections = 3000

    override func setUpWithError() throws {
        // Two floods' worth of sockets open at once here, as many in the relay (which raises
        // its own limit at start).
        raiseOpenFileLimit()
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        try XCTSkipIf(limit.rlim_cur < 2 * UInt64(Self.connections) + 500, "RLIMIT_NOFILE is \(limit.rlim_cur): too few descriptors")
    }

    func testTCPFloodsGiveTheirMemoryBackWhateverSlotsTheyUsed() throws {
        try floodTwice(transport: "tcp", bytes: Self.unfinishedMessage(), growth: 32)
    }

    func testTLSFloodsGiveTheirMemoryBackWhateverSlotsTheyUsed() throws {
        try floodTwice(transport: "tls", bytes: Self.unfinishedClientHello(), growth: 8)
    }

    /// `growth`: the KiB a connection's bytes must at least add to the relay's memory, to show
    /// the flood really filled it.
    private func floodTwice(transport: String, bytes: [UInt8], growth: Int) throws {
        let limit = String(3 * Self.connections)
        let server = try TurnStreamServerFixture(["--turn-max-connections", limit, "--turn-max-connections-per-source", limit])
        let relay = server.relay
        let pid = relay.process.processIdentifier
        let port = transport == "tls" ? server.tlsPort : server.tcpPort
        let start = try ProcessFootprint(pid: pid)

        try flood(relay, transport, port, bytes, start: start, growth: growth, what: "first flood")

        // The second flood's connections take other slots: the first flood's are held meanwhile.
        let holders = try StalledConnectionsFixture(count: Self.connections, port: port)
        XCTAssertTrue(try waitForConnections(relay, transport, Self.connections), "idle connections accepted")
        try flood(relay, transport, port, bytes, start: start, growth: growth, what: "second flood", holding: holders)
    }

    /// Opens the flood, waits until the relay holds every byte, checks that its memory grew,
    /// resets every connection (and closes `holders`), and checks that its memory came back.
    private func flood(_ relay: RelayProcess, _ transport: String, _ port: UInt16, _ bytes: [UInt8], start: ProcessFootprint,
                       growth: Int, what: String, holding holders: StalledConnectionsFixture? = nil) throws {
        let pid = relay.process.processIdentifier
        let open = Self.connections + (holders?.count ?? 0)
        let flood = try StalledConnectionsFixture(count: Self.connections, port: port)
        try flood.sendWhole(bytes)
        let read = eventually(seconds: 30) { ((try? KernelTCPQueues(port: port))?.bytesInFlightToServer ?? 1) == 0 }
        XCTAssertTrue(read, "\(what): the relay did not read every connection's bytes")
        XCTAssertTrue(try waitForConnections(relay, transport, open), "\(what): connections accepted")
        let peak = try ProcessFootprint(pid: pid)
        XCTAssertGreaterThan(peak.residentKilobytes - start.residentKilobytes, Self.connections * growth,
                             "\(what): the flood did not fill the relay's memory (start \(start), peak \(peak))")

        flood.resetAll()
        holders?.closeAll()
        XCTAssertTrue(try waitForConnections(relay, transport, 0), "\(what): connections still open")
        var after = try ProcessFootprint(pid: pid)
        let bound = start.residentKilobytes + start.residentKilobytes / 10
        let released = eventually(seconds: 10) {
            after = (try? ProcessFootprint(pid: pid)) ?? after
            return after.residentKilobytes <= bound
        }
        print("TurnStreamMemoryReleaseTests \(transport) \(what): start \(start); with \(open) connections \(peak); after \(after)")
        XCTAssertTrue(released, "\(what) over \(transport): start \(start), peak \(peak), after \(after): not back within 10%")
    }

    private func waitForConnections(_ relay: RelayProcess, _ transport: String, _ count: Int) throws -> Bool {
        let stats = try relay.waitFor(seconds: 30) { RelayProcess.number($0, "turn", "transports", transport, "connections") == count }
        return RelayProcess.number(stats, "turn", "transports", transport, "connections") == count
    }

    /// A Binding request announcing 65,532 bytes of attributes, sent but for its last 512: the
    /// relay keeps it in the connection's input, waiting for the rest.
    private static func unfinishedMessage() -> [UInt8] {
        var header = MessageBuilder(MessageType(.binding, .request), transactionID: .random()).bytes
        header[2] = 0xFF
        header[3] = 0xFC
        return header + [UInt8](repeating: 0, count: 65_532 - 512)
    }

    /// A TLS handshake record carrying a ClientHello that announces 16 KiB, the most the relay
    /// accepts (`ClientHelloSize`), and lacks its last 512 bytes: the TLS library holds what
    /// came, waiting for the rest.
    private static func unfinishedClientHello() -> [UInt8] {
        let announced = 16_384
        var payload = [UInt8](repeating: 0x41, count: 4 + announced - 512)
        payload.replaceSubrange(0..<4, with: [0x01, UInt8(announced >> 16), UInt8(announced >> 8 & 0xFF), UInt8(announced & 0xFF)])
        let recordLength = 4 + announced
        return [0x16, 0x03, 0x01, UInt8(recordLength >> 8), UInt8(recordLength & 0xFF)] + payload
    }
}
