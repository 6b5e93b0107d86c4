import DatagramEngine
import Foundation
import NetAddress
import RelayCore
import RelayHTTP

/// The JSON of the session API: requests read strictly (unknown fields, wrong types and bad
/// values are refused with the field's name), answers written from worker snapshots.
enum SessionJSON {
    static let fields: Set<String> = [
        "legs", "service_class", "dscp", "ecn", "ecn_marking", "idle_timeout_seconds", "max_packets_per_second",
        "max_bytes_per_second", "relatch_after_seconds", "relatch", "rtcp", "allowed_sources",
    ]

    static func request(from body: [UInt8], defaults: MarkingPolicy, idleTimeout: Int,
                        ecnMarking: Bool = true) throws(JSONObjectError) -> SessionRequest {
        let reader = try JSONObjectReader(body, allowedKeys: fields)
        var request = SessionRequest()
        request.policy = defaults
        request.idleTimeoutSeconds = idleTimeout
        request.ecnMarking = ecnMarking
        if let legs = try reader.int("legs", range: SessionRequest.legRange) { request.legs = legs }
        if let name = try reader.string("service_class", oneOf: ServiceClass.allCases.map(\.rawValue)) {
            request.policy.serviceClass = ServiceClass(rawValue: name)!
        }
        if let dscp = try reader.string("dscp", oneOf: DSCPPolicy.allCases.map(\.rawValue)) {
            request.policy.dscp = DSCPPolicy(rawValue: dscp)!
        }
        if let ecn = try reader.string("ecn", oneOf: ECNPolicy.allCases.map(\.rawValue)) {
            request.policy.ecn = ECNPolicy(rawValue: ecn)!
        }
        if let seconds = try reader.int("idle_timeout_seconds", range: 1...86_400) { request.idleTimeoutSeconds = seconds }
        if let rate = try reader.int("max_packets_per_second", range: 0...1_000_000) { request.maxPacketsPerSecond = rate }
        if let rate = try reader.int("max_bytes_per_second", range: 0...1_000_000_000) { request.maxBytesPerSecond = rate }
        if let marking = try reader.string("ecn_marking", oneOf: ["on", "off"]) { request.ecnMarking = marking == "on" }
        if let seconds = try reader.int("relatch_after_seconds", range: 0...3_600) { request.relatchAfterSeconds = seconds }
        if let relatch = try reader.string("relatch", oneOf: RelatchPolicy.allCases.map(\.rawValue)) {
            request.relatch = RelatchPolicy(rawValue: relatch)!
        }
        if let rtcp = try reader.string("rtcp", oneOf: RTCPMode.allCases.map(\.rawValue)) { request.rtcp = RTCPMode(rawValue: rtcp)! }
        if let ranges = try reader.stringArray("allowed_sources") {
            guard ranges.count <= 64 else {
                throw JSONObjectError(field: "allowed_sources", description: "field \"allowed_sources\": at most 64 ranges")
            }
            request.allowedSources = try ranges.map { text throws(JSONObjectError) in
                guard let range = AddressRange(parsing: text) else {
                    throw JSONObjectError(field: "allowed_sources",
                                          description: "field \"allowed_sources\": \"\(text.prefix(64))\" is not a CIDR such as 192.0.2.0/24 or 2001:db8::/32")
                }
                return range
            }
        }
        return request
    }

    static func object(_ info: SessionInfo) -> [String: Any] {
        [
            "id": info.id,
            "worker": info.worker,
            "service_class": info.request.policy.serviceClass.rawValue,
            "dscp": info.request.policy.dscp.rawValue,
            "ecn": info.request.policy.ecn.rawValue,
            "ecn_marking": info.request.ecnMarking ? "on" : "off",
            "idle_timeout_seconds": info.request.idleTimeoutSeconds,
            "max_packets_per_second": info.request.maxPacketsPerSecond,
            "max_bytes_per_second": info.request.maxBytesPerSecond,
            "relatch_after_seconds": info.request.relatchAfterSeconds,
            "relatch": info.request.relatch.rawValue,
            "rtcp": info.request.rtcp.rawValue,
            "allowed_sources": info.request.allowedSources.map(\.text),
            "age_seconds": info.ageSeconds,
            "idle_seconds": info.idleSeconds,
            "legs": info.legs.map(leg),
        ]
    }

    /// A leg; in an `"rtcp": "pair"` session with its RTCP companion under "rtcp" (same fields).
    static func leg(_ leg: LegInfo) -> [String: Any] {
        var object = socket(leg.address, latched: leg.latched, counters: leg.counters)
        if let rtcp = leg.rtcp { object["rtcp"] = socket(rtcp.address, latched: rtcp.latched, counters: rtcp.counters) }
        return object
    }

    static func socket(_ address: Endpoint, latched: Endpoint?, counters: LegCounters) -> [String: Any] {
        var drops: [String: Any] = [:]
        for reason in DropReason.allCases where counters.drops[reason] > 0 { drops[reason.name] = counters.drops[reason] }
        return [
            "address": address.hostText,
            "port": Int(address.port),
            "latched": latched.map { ["address": $0.hostText, "port": Int($0.port)] as [String: Any] } ?? NSNull(),
            "packets_in": counters.packetsIn,
            "bytes_in": counters.bytesIn,
            "packets_out": counters.packetsOut,
            "bytes_out": counters.bytesOut,
            "ecn_in": ecn(counters.ecnIn),
            "ecn_out": ecn(counters.ecnOut),
            "drops": drops,
            "ce_marked": ceMarks(counters.ceMarked),
            "relatches": counters.relatches,
        ]
    }

    /// CE marks the relay set, by cause; every cause is listed, `backlog` included (0 until the
    /// engine measures sojourn).
    static func ceMarks(_ counts: CEMarkCounts) -> [String: Any] {
        var result: [String: Any] = [:]
        for cause in CEMarkCause.allCases { result[cause.name] = counts[cause] }
        return result
    }

    static func ecn(_ counts: InlineArray<4, UInt64>) -> [String: Any] {
        var result: [String: Any] = [:]
        for codepoint in ECN.allCases { result[codepoint.name] = counts[Int(codepoint.rawValue)] }
        return result
    }
}
