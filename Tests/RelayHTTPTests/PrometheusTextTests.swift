import RelayHTTP
import XCTest

final class PrometheusTextTests: XCTestCase {
    private func lines(_ text: PrometheusText) -> [String] {
        let output = text.text
        XCTAssertTrue(output.hasSuffix("\n"))
        return output.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    func testFamiliesAreContiguousWithHelpAndTypeOnce() {
        var text = PrometheusText()
        text.counter("mediarelay_packets_in_total", help: "Datagrams received.", labels: [("worker", "0")], value: 10)
        text.gauge("mediarelay_workers", help: "Worker threads.", value: 2)
        text.counter("mediarelay_packets_in_total", help: "ignored", labels: [("worker", "1")], value: UInt64.max)
        XCTAssertEqual(
            lines(text),
            [
                "# HELP mediarelay_packets_in_total Datagrams received.",
                "# TYPE mediarelay_packets_in_total counter",
                #"mediarelay_packets_in_total{worker="0"} 10"#,
                #"mediarelay_packets_in_total{worker="1"} 18446744073709551615"#,
                "# HELP mediarelay_workers Worker threads.",
                "# TYPE mediarelay_workers gauge",
                "mediarelay_workers 2",
            ])
    }

    func testLabelValuesAndHelpAreEscaped() {
        var text = PrometheusText()
        text.gauge(
            "mediarelay_info", help: "Build info \\ with \"quotes\"\nand a newline.",
            labels: [("version", "1.0 \"beta\""), ("engine", "a\\b\nc\r\nd")], value: 1)
        XCTAssertEqual(
            lines(text),
            [
                #"# HELP mediarelay_info Build info \\ with "quotes"\nand a newline."#,
                "# TYPE mediarelay_info gauge",
                "mediarelay_info{version=\"1.0 \\\"beta\\\"\",engine=\"a\\\\b\\nc\r\\nd\"} 1",
            ])
    }

    func testHistogramBucketsAreCumulativeWithSumAndCount() {
        var text = PrometheusText()
        text.histogram(
            "mediarelay_batch_size", help: "Datagrams per receive call.", labels: [("worker", "0")],
            buckets: [(1, 5), (2, 0), (4, 3), (.infinity, 2)], sum: 27)
        XCTAssertEqual(
            lines(text),
            [
                "# HELP mediarelay_batch_size Datagrams per receive call.",
                "# TYPE mediarelay_batch_size histogram",
                #"mediarelay_batch_size_bucket{worker="0",le="1"} 5"#,
                #"mediarelay_batch_size_bucket{worker="0",le="2"} 5"#,
                #"mediarelay_batch_size_bucket{worker="0",le="4"} 8"#,
                #"mediarelay_batch_size_bucket{worker="0",le="+Inf"} 10"#,
                #"mediarelay_batch_size_sum{worker="0"} 27"#,
                #"mediarelay_batch_size_count{worker="0"} 10"#,
            ])
    }

    func testNumberFormatting() {
        XCTAssertEqual(PrometheusText.format(0), "0")
        XCTAssertEqual(PrometheusText.format(-3), "-3")
        XCTAssertEqual(PrometheusText.format(123_456_789_012), "123456789012")
        XCTAssertEqual(PrometheusText.format(0.25), "0.25")
        XCTAssertEqual(PrometheusText.format(.infinity), "+Inf")
        XCTAssertEqual(PrometheusText.format(-.infinity), "-Inf")
        XCTAssertEqual(PrometheusText.format(.nan), "NaN")
        XCTAssertEqual(Double(PrometheusText.format(1e20)), 1e20)
        XCTAssertEqual(Double(PrometheusText.format(1.5e-7)), 1.5e-7)
    }

    func testTypeConflictIsDroppedNotWritten() {
        var text = PrometheusText()
        text.counter("m", help: "h", value: 1)
        text.gauge("m", help: "h", value: 2)
        XCTAssertEqual(lines(text), ["# HELP m h", "# TYPE m counter", "m 1"])
    }

    func testNamesAreSanitized() {
        var text = PrometheusText()
        text.gauge("9bad-name", help: "h", labels: [("le:x", "v")], value: 1)
        XCTAssertEqual(lines(text).last, #"_bad_name{le_x="v"} 1"#)
    }

    func testResponseCarriesTheExpositionContentType() {
        var text = PrometheusText()
        text.gauge("mediarelay_sessions", help: "Open sessions.", value: 3)
        let response = text.response
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8")
        XCTAssertEqual(String(decoding: response.body, as: UTF8.self), text.text)
    }

    func testEmptyWriterGivesEmptyText() {
        XCTAssertEqual(PrometheusText().text, "")
    }
}
