/// A writer for the Prometheus text exposition format, version 0.0.4.
///
/// Contract: samples may be added in any order; `text` groups them by family, in the order
/// each family was first seen, with one `# HELP` and one `# TYPE` line per family (the format
/// requires a family's lines to be contiguous). The first help text and type given for a name
/// win; a sample of a family under a different type is dropped rather than written as an
/// invalid exposition. Names are sanitized to [a-zA-Z_:][a-zA-Z0-9_:]* and label values
/// escaped (\\, \", \n), so no input can break the output's syntax.
public struct PrometheusText: Sendable {
    /// The `# TYPE` of a family.
    public enum MetricType: String, Sendable {
        case counter, gauge, histogram, untyped
    }

    public typealias Labels = [(name: String, value: String)]

    private struct Family: Sendable {
        var name: String
        var help: String
        var type: MetricType
        var samples: [String] = []
    }

    private var families: [Family] = []
    private var familyIndex: [String: Int] = [:]

    public init() {}

    public mutating func counter(_ name: String, help: String, labels: Labels = [], value: Double) {
        add(name, help, .counter, [(name, labels, PrometheusText.format(value))])
    }

    public mutating func counter(_ name: String, help: String, labels: Labels = [], value: UInt64) {
        add(name, help, .counter, [(name, labels, String(value))])
    }

    public mutating func counter(_ name: String, help: String, labels: Labels = [], value: Int) {
        add(name, help, .counter, [(name, labels, String(value))])
    }

    public mutating func gauge(_ name: String, help: String, labels: Labels = [], value: Double) {
        add(name, help, .gauge, [(name, labels, PrometheusText.format(value))])
    }

    public mutating func gauge(_ name: String, help: String, labels: Labels = [], value: Int) {
        add(name, help, .gauge, [(name, labels, String(value))])
    }

    public mutating func gauge(_ name: String, help: String, labels: Labels = [], value: UInt64) {
        add(name, help, .gauge, [(name, labels, String(value))])
    }

    /// One histogram series. `buckets` holds per-bucket (non-cumulative) counts by inclusive
    /// upper bound, in increasing order, as the relay counts them; this writes the cumulative
    /// `_bucket{le=...}` lines Prometheus expects, always ending with `le="+Inf"` equal to
    /// `_count`. A bucket whose bound is +infinity adds its count to the +Inf line.
    public mutating func histogram(
        _ name: String, help: String, labels: Labels = [],
        buckets: [(upperBound: Double, count: UInt64)], sum: Double
    ) {
        var lines: [(String, Labels, String)] = []
        var cumulative: UInt64 = 0
        for bucket in buckets.sorted(by: { $0.upperBound < $1.upperBound }) {
            cumulative &+= bucket.count
            if bucket.upperBound.isInfinite { continue }
            lines.append((name + "_bucket", labels + [("le", PrometheusText.format(bucket.upperBound))], String(cumulative)))
        }
        lines.append((name + "_bucket", labels + [("le", "+Inf")], String(cumulative)))
        lines.append((name + "_sum", labels, PrometheusText.format(sum)))
        lines.append((name + "_count", labels, String(cumulative)))
        add(name, help, .histogram, lines)
    }

    /// The exposition, ending with a newline (an empty string when nothing was added).
    public var text: String {
        var output = ""
        for family in families {
            output += "# HELP \(family.name) \(PrometheusText.escapeHelp(family.help))\n"
            output += "# TYPE \(family.name) \(family.type.rawValue)\n"
            for sample in family.samples { output += sample + "\n" }
        }
        return output
    }

    /// The content type Prometheus expects for this format.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// A 200 response carrying `text` with the format's content type, for GET /metrics.
    public var response: HTTPResponse {
        HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", PrometheusText.contentType)]), body: Array(text.utf8))
    }

    private mutating func add(_ name: String, _ help: String, _ type: MetricType, _ samples: [(String, Labels, String)]) {
        let familyName = PrometheusText.sanitize(name, allowColon: true)
        let index: Int
        if let existing = familyIndex[familyName] {
            guard families[existing].type == type else { return }
            index = existing
        } else {
            index = families.count
            familyIndex[familyName] = index
            families.append(Family(name: familyName, help: help, type: type))
        }
        for (sampleName, labels, value) in samples {
            families[index].samples.append(
                PrometheusText.sanitize(sampleName, allowColon: true) + PrometheusText.render(labels) + " " + value)
        }
    }

    private static func render(_ labels: Labels) -> String {
        guard !labels.isEmpty else { return "" }
        let pairs = labels.map { "\(sanitize($0.name, allowColon: false))=\"\(escapeLabelValue($0.value))\"" }
        return "{" + pairs.joined(separator: ",") + "}"
    }

    /// Numbers as Prometheus parses them: integral values without exponent or ".0", the special
    /// values as +Inf, -Inf and NaN, others in Swift's shortest round-trip form.
    public static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    /// By scalar, not Character: "\r\n" is one Character and would slip past a "\n" case.
    public static func escapeLabelValue(_ value: String) -> String {
        var escaped = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    /// HELP text escapes only backslash and newline (quotes are literal there).
    static func escapeHelp(_ help: String) -> String {
        help.replacingBackslashAndNewline()
    }

    static func sanitize(_ name: String, allowColon: Bool) -> String {
        var result = ""
        for (offset, scalar) in name.unicodeScalars.enumerated() {
            let isLetter = (scalar >= "a" && scalar <= "z") || (scalar >= "A" && scalar <= "Z") || scalar == "_"
            let isDigit = scalar >= "0" && scalar <= "9"
            let ok = isLetter || (allowColon && scalar == ":") || (isDigit && offset > 0)
            result.unicodeScalars.append(ok ? scalar : "_")
        }
        return result.isEmpty ? "_" : result
    }
}

extension String {
    fileprivate func replacingBackslashAndNewline() -> String {
        var escaped = ""
        for scalar in unicodeScalars {
            switch scalar {
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }
}
