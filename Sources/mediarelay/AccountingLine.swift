import RelayCore

/// The fields of an accounting line (`msg` `accounting`), from the record a worker built when
/// an allocation, a session or a forward-rule client ended.
///
/// Contract: fixed keys in a fixed order: `kind`, the entry's name (`user`, `session` or
/// `rule`), `transport`, `reason`, `start` (RFC 3339, UTC), `duration_ms`; then for each side
/// (`client`, `peers`, `upstream`, `leg0`...) its far address under the side's name when it
/// has one, `_local` (the relay's addresses there, comma-separated) when it has any,
/// `_packets_in`, `_bytes_in`, `_ecn_in`, `_packets_out`, `_bytes_out`, `_ecn_out` (ECN counts
/// by codepoint value: Not-ECT, ECT(1), ECT(0), CE); then `ce_marked` and `drops` (by reason,
/// only those that counted).
enum AccountingLine {
    static let message = "accounting"

    static func fields(_ record: AccountingRecord) -> [LogField] {
        var fields = [
            LogField("kind", .text(record.kind.name)),
            LogField(record.kind.idKey, .text(record.id)),
            LogField("transport", .text(record.transport.name)),
            LogField("reason", .text(record.reason.name)),
            LogField("start", .text(LogLine.rfc3339(record.startNanoseconds))),
            LogField("duration_ms", .integer(record.durationNanoseconds / 1_000_000)),
        ]
        for side in record.sides {
            let name = side.name
            if let remote = side.remote { fields.append(LogField(name, .text(remote.description))) }
            if !side.local.isEmpty {
                fields.append(LogField(name + "_local", .text(side.local.map(\.description).joined(separator: ","))))
            }
            fields += [
                LogField(name + "_packets_in", .integer(side.packetsIn)),
                LogField(name + "_bytes_in", .integer(side.bytesIn)),
                LogField(name + "_ecn_in", .integers(side.ecnIn)),
                LogField(name + "_packets_out", .integer(side.packetsOut)),
                LogField(name + "_bytes_out", .integer(side.bytesOut)),
                LogField(name + "_ecn_out", .integers(side.ecnOut)),
            ]
        }
        fields.append(LogField("ce_marked", .integer(record.ceMarked)))
        fields.append(LogField("drops", .counts(record.drops.map { LogCount(name: $0.reason, count: $0.count) })))
        return fields
    }
}
