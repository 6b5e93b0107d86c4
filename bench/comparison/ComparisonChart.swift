import Foundation
import LoadGen

/// One line of a chart: an engine's medians (with min-max whiskers) against offered rate, and
/// optionally one separate marker (the voice load, which is not on the constant-rate line).
public struct ChartSeries: Sendable {
    public let name: String
    public let points: [(x: Double, y: Summary)]
    public let marker: (x: Double, y: Summary)?

    public init(name: String, points: [(x: Double, y: Summary)], marker: (x: Double, y: Summary)?) {
        self.name = name
        self.points = points
        self.marker = marker
    }
}

/// Draws the comparison's SVG by hand (no libraries): two charts stacked in one file, each
/// with axes, ticks, axis labels, a title and a legend; one `<polyline>` per engine per chart.
public enum ComparisonChart {
    /// Eight: four relay engines and their four C counterparts (`compare --references all`).
    static let colors = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]
    static let width = 960.0, chartHeight = 420.0
    static let left = 90.0, right = 720.0, top = 50.0, bottom = 350.0

    /// - Parameters:
    ///   - cpu: relay CPU us per datagram per engine.
    ///   - latency: p99 latency us per engine.
    public static func render(cpu: [ChartSeries], latency: [ChartSeries], markerLabel: String) -> String {
        var s = """
        <?xml version="1.0" encoding="UTF-8"?>
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(2 * chartHeight))" viewBox="0 0 \(Int(width)) \(Int(2 * chartHeight))" font-family="sans-serif" font-size="12">
        <rect x="0" y="0" width="\(Int(width))" height="\(Int(2 * chartHeight))" fill="white"/>

        """
        s += chart(id: "cpu-chart", title: "Relay CPU per datagram", yLabel: "CPU us per datagram", series: cpu, offsetY: 0, markerLabel: markerLabel)
        // Latency spans decades (tens of us unloaded, up to a second when a queue builds up under
        // overload), so its axis is logarithmic; CPU per datagram stays within one decade: linear.
        s += chart(id: "latency-chart", title: "p99 latency (log scale)", yLabel: "p99 latency (us)", series: latency, offsetY: chartHeight,
                   markerLabel: markerLabel, logScale: true)
        return s + "</svg>\n"
    }

    static func chart(id: String, title: String, yLabel: String, series: [ChartSeries], offsetY: Double, markerLabel: String,
                      logScale: Bool = false) -> String {
        let xs = series.flatMap { $0.points.map(\.x) + ($0.marker.map { [$0.x] } ?? []) }
        let ys = series.flatMap { $0.points.map(\.y.max) + ($0.marker.map { [$0.y.max] } ?? []) }.filter(\.isFinite)
        let xTicks = niceTicks(max: xs.max() ?? 1)
        let yTicks = logScale ? decadeTicks(ys) : niceTicks(max: ys.max() ?? 1)
        let xMax = xTicks.last ?? 1, yMax = yTicks.last ?? 1, yMin = yTicks.first ?? 0
        func px(_ x: Double) -> Double { left + (right - left) * x / xMax }
        func py(_ y: Double) -> Double {
            guard logScale else { return bottom - (bottom - top) * y / yMax }
            let clamped = Swift.max(y, yMin)
            return bottom - (bottom - top) * (log10(clamped) - log10(yMin)) / Swift.max(1e-9, log10(yMax) - log10(yMin))
        }
        var s = "<g id=\"\(id)\" transform=\"translate(0,\(f(offsetY)))\">\n"
        s += "<text x=\"\(f((left + right) / 2))\" y=\"28\" text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\">\(escape(title))</text>\n"
        // Grid and ticks.
        for t in yTicks {
            s += "<line x1=\"\(f(left))\" y1=\"\(f(py(t)))\" x2=\"\(f(right))\" y2=\"\(f(py(t)))\" stroke=\"#e0e0e0\"/>\n"
            s += "<text x=\"\(f(left - 8))\" y=\"\(f(py(t) + 4))\" text-anchor=\"end\">\(escape(label(t)))</text>\n"
        }
        for t in xTicks {
            s += "<line x1=\"\(f(px(t)))\" y1=\"\(f(bottom))\" x2=\"\(f(px(t)))\" y2=\"\(f(bottom + 5))\" stroke=\"black\"/>\n"
            s += "<text x=\"\(f(px(t)))\" y=\"\(f(bottom + 20))\" text-anchor=\"middle\">\(escape(label(t)))</text>\n"
        }
        s += "<line x1=\"\(f(left))\" y1=\"\(f(bottom))\" x2=\"\(f(right))\" y2=\"\(f(bottom))\" stroke=\"black\"/>\n"
        s += "<line x1=\"\(f(left))\" y1=\"\(f(top))\" x2=\"\(f(left))\" y2=\"\(f(bottom))\" stroke=\"black\"/>\n"
        s += "<text x=\"\(f((left + right) / 2))\" y=\"\(f(bottom + 45))\" text-anchor=\"middle\">offered load (datagrams/s)</text>\n"
        s += "<text x=\"24\" y=\"\(f((top + bottom) / 2))\" text-anchor=\"middle\" transform=\"rotate(-90 24 \(f((top + bottom) / 2)))\">\(escape(yLabel))</text>\n"
        // Series: line through medians, whiskers for min-max, diamond for the separate marker.
        for (i, one) in series.enumerated() {
            let color = colors[i % colors.count]
            let sorted = one.points.filter { $0.y.median.isFinite }.sorted { $0.x < $1.x }
            let coordinates = sorted.map { "\(f(px($0.x))),\(f(py($0.y.median)))" }.joined(separator: " ")
            s += "<polyline class=\"series\" data-engine=\"\(escape(one.name))\" points=\"\(coordinates)\" fill=\"none\" stroke=\"\(color)\" stroke-width=\"2\"/>\n"
            for p in sorted {
                s += "<line x1=\"\(f(px(p.x)))\" y1=\"\(f(py(p.y.min)))\" x2=\"\(f(px(p.x)))\" y2=\"\(f(py(p.y.max)))\" stroke=\"\(color)\"/>\n"
                s += "<circle cx=\"\(f(px(p.x)))\" cy=\"\(f(py(p.y.median)))\" r=\"3\" fill=\"\(color)\"/>\n"
            }
            if let m = one.marker, m.y.median.isFinite {
                let (cx, cy) = (px(m.x), py(m.y.median))
                s += "<polygon points=\"\(f(cx)),\(f(cy - 6)) \(f(cx + 6)),\(f(cy)) \(f(cx)),\(f(cy + 6)) \(f(cx - 6)),\(f(cy))\" fill=\"none\" stroke=\"\(color)\" stroke-width=\"2\"/>\n"
            }
            let ly = top + 10 + Double(i) * 22
            s += "<line x1=\"740\" y1=\"\(f(ly))\" x2=\"770\" y2=\"\(f(ly))\" stroke=\"\(color)\" stroke-width=\"2\"/>\n"
            s += "<text x=\"778\" y=\"\(f(ly + 4))\">\(escape(one.name))</text>\n"
        }
        let ly = top + 10 + Double(series.count) * 22
        s += "<polygon points=\"755,\(f(ly - 6)) 761,\(f(ly)) 755,\(f(ly + 6)) 749,\(f(ly))\" fill=\"none\" stroke=\"black\"/>\n"
        s += "<text x=\"778\" y=\"\(f(ly + 4))\">\(escape(markerLabel))</text>\n"
        s += "<text x=\"740\" y=\"\(f(ly + 26))\" fill=\"#555\">lines: medians; bars: min-max</text>\n"
        return s + "</g>\n"
    }

    /// 0 and about five round steps (1, 2 or 5 times a power of ten) up to at least `max`.
    static func niceTicks(max: Double) -> [Double] {
        let top = max > 0 && max.isFinite ? max : 1
        let raw = top / 5
        let magnitude = pow(10, floor(log10(raw)))
        let step = [1.0, 2, 5, 10].map { $0 * magnitude }.first { $0 >= raw } ?? 10 * magnitude
        var ticks: [Double] = [0]
        while ticks.last! < top - step * 1e-9 { ticks.append(ticks.last! + step) }
        return ticks
    }

    /// Powers of ten from just below the smallest positive value to just above the largest.
    static func decadeTicks(_ values: [Double]) -> [Double] {
        let positive = values.filter { $0 > 0 }
        let low = floor(log10(positive.min() ?? 1)), high = Swift.max(low + 1, ceil(log10(positive.max() ?? 10)))
        return stride(from: low, through: high, by: 1).map { pow(10, $0) }
    }

    static func label(_ v: Double) -> String {
        if v >= 1_000_000, v.truncatingRemainder(dividingBy: 1_000_000) == 0 { return "\(Int(v / 1_000_000))M" }
        if v >= 1000, v.truncatingRemainder(dividingBy: 1000) == 0 { return "\(Int(v / 1000))k" }
        if v == v.rounded() { return String(Int(v)) }
        return String(format: "%g", v)
    }

    static func f(_ v: Double) -> String { String(format: "%.1f", v) }

    static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
