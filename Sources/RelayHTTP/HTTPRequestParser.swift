/// What the parser makes of the bytes a connection has buffered so far.
enum RequestParseResult: Equatable {
    /// More bytes are needed; nothing is consumed.
    case incomplete
    /// The head is complete and valid, the body is not: nothing is consumed, and the request
    /// is whole once `total` bytes (from the start of the buffer given) are there. The caller
    /// need not parse again before then: a body trickling in must not re-parse the head.
    case awaitingBody(total: Int)
    /// One request and the number of buffered bytes it used (head and body).
    case complete(HTTPRequest, consumed: Int)
    /// The client broke the protocol or a limit; answer `status` with `reason` and close, as
    /// the framing of anything after it can no longer be trusted.
    case invalid(status: Int, reason: String)
}

/// A strict HTTP/1.x request parser over a connection's buffered bytes.
///
/// Contract: stateless and total: any byte sequence gives one of the three results, never a
/// trap. It accepts only origin-form targets, HTTP/1.0 and HTTP/1.1, CRLF line ends and
/// Content-Length framing; it refuses Transfer-Encoding (501, or 400 with Content-Length, the
/// request smuggling case) and a repeated Authorization or Host (400) rather than guessing. It keeps no state: once a head is complete it
/// says how many bytes the whole request needs, and the caller waits for them.
struct HTTPRequestParser {
    let limits: HTTPLimits

    func parse(_ buffer: ArraySlice<UInt8>) -> RequestParseResult {
        var start = buffer.startIndex
        // RFC 9112 section 2.2: ignore empty lines before a request line (some clients send a
        // CRLF after a POST body).
        while buffer.endIndex - start >= 2, buffer[start] == cr, buffer[start + 1] == lf {
            start += 2
        }
        guard let headEnd = findHeadEnd(buffer, from: start) else {
            // Measured from the buffer's start so that endless empty lines count too. A head at
            // the limit may still be missing up to 3 bytes of its CRLFCRLF: too large only once
            // those have come, or the verdict would depend on how the bytes were cut.
            if buffer.endIndex - buffer.startIndex > limits.maxHeaderBytes + 3 {
                return .invalid(status: 431, reason: tooLargeHead)
            }
            return .incomplete
        }
        if headEnd - buffer.startIndex > limits.maxHeaderBytes {
            return .invalid(status: 431, reason: tooLargeHead)
        }
        let lines = splitLines(buffer[start..<headEnd])
        if lines.contains(where: { $0.contains(cr) || $0.contains(lf) }) {
            return .invalid(status: 400, reason: "bare CR or LF in the request head; lines end with CRLF")
        }
        var request: HTTPRequest
        switch parseRequestLine(lines[0]) {
        case .success(let parsed): request = parsed
        case .failure(let failure): return .invalid(status: failure.status, reason: failure.reason)
        }
        for line in lines.dropFirst() {
            switch parseField(line) {
            case .success(let field): request.headers.add(field.name, field.value)
            case .failure(let failure): return .invalid(status: failure.status, reason: failure.reason)
            }
        }
        // Two credentials or two hosts leave the server to pick one, and a proxy in front may
        // pick the other: refuse rather than guess (RFC 9112 section 3.2 demands it for Host).
        for name in ["Authorization", "Host"] where request.headers.values(for: name).count > 1 {
            return .invalid(status: 400, reason: "more than one \(name) header; send it once")
        }
        let bodyLength: Int
        switch contentLength(request.headers) {
        case .success(let length): bodyLength = length
        case .failure(let failure): return .invalid(status: failure.status, reason: failure.reason)
        }
        let bodyStart = headEnd + 4
        guard buffer.endIndex - bodyStart >= bodyLength else {
            return .awaitingBody(total: bodyStart + bodyLength - buffer.startIndex)
        }
        request.body = Array(buffer[bodyStart..<bodyStart + bodyLength])
        return .complete(request, consumed: bodyStart + bodyLength - buffer.startIndex)
    }

    private var tooLargeHead: String {
        "request line and headers exceed \(limits.maxHeaderBytes) bytes"
    }

    /// Index of the CRLFCRLF that ends the head, looking no further than the limit allows.
    private func findHeadEnd(_ buffer: ArraySlice<UInt8>, from start: Int) -> Int? {
        let end = min(buffer.endIndex, buffer.startIndex + limits.maxHeaderBytes + 4)
        var i = start
        while i + 3 < end {
            if buffer[i] == cr, buffer[i + 1] == lf, buffer[i + 2] == cr, buffer[i + 3] == lf {
                return i
            }
            i += 1
        }
        return nil
    }

    private func splitLines(_ head: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        var lines: [ArraySlice<UInt8>] = []
        var lineStart = head.startIndex
        var i = head.startIndex
        while i + 1 < head.endIndex {
            if head[i] == cr, head[i + 1] == lf {
                lines.append(head[lineStart..<i])
                i += 2
                lineStart = i
            } else {
                i += 1
            }
        }
        lines.append(head[lineStart..<head.endIndex])
        return lines
    }

    private func parseRequestLine(_ line: ArraySlice<UInt8>) -> Result<HTTPRequest, ParseFailure> {
        let parts = line.split(separator: space, omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty }) else {
            return .failure(.bad("request line must be METHOD SP TARGET SP HTTP/1.1"))
        }
        let (method, target, version) = (parts[0], parts[1], parts[2])
        guard method.allSatisfy(isTokenByte) else {
            return .failure(.bad("method is not a token"))
        }
        guard target.first == slash, target.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return .failure(.bad("request target must be a path starting with / in printable ASCII"))
        }
        let versionText = String(decoding: version, as: UTF8.self)
        guard versionText == "HTTP/1.1" || versionText == "HTTP/1.0" else {
            let looksLikeHTTP = versionText.count == 8 && versionText.hasPrefix("HTTP/")
            return .failure(
                looksLikeHTTP
                    ? ParseFailure(status: 505, reason: "only HTTP/1.1 and HTTP/1.0 are supported")
                    : .bad("protocol version must be HTTP/1.1 or HTTP/1.0"))
        }
        let targetText = String(decoding: target, as: UTF8.self)
        var request = HTTPRequest(
            method: String(decoding: method, as: UTF8.self), path: targetText, version: versionText)
        if let question = targetText.firstIndex(of: "?") {
            request.path = String(targetText[..<question])
            request.query = String(targetText[targetText.index(after: question)...])
        }
        return .success(request)
    }

    private func parseField(_ line: ArraySlice<UInt8>) -> Result<(name: String, value: String), ParseFailure> {
        if line.first == space || line.first == tab {
            return .failure(.bad("obsolete header line folding is not accepted"))
        }
        guard let colonIndex = line.firstIndex(of: colon) else {
            return .failure(.bad("header line without a colon"))
        }
        let name = line[line.startIndex..<colonIndex]
        guard !name.isEmpty, name.allSatisfy(isTokenByte) else {
            return .failure(.bad("header name is not a token (no spaces before the colon)"))
        }
        let rawValue = line[(colonIndex + 1)...]
        guard rawValue.allSatisfy({ $0 == tab || $0 >= 0x20 && $0 != 0x7F }) else {
            return .failure(.bad("control character in the value of header \(String(decoding: name, as: UTF8.self))"))
        }
        let value = Substring(String(decoding: rawValue, as: UTF8.self)).trimmingSpaces()
        return .success((String(decoding: name, as: UTF8.self), String(value)))
    }

    private func contentLength(_ headers: HTTPHeaders) -> Result<Int, ParseFailure> {
        let lengths = headers.values(for: "Content-Length")
        if headers.contains("Transfer-Encoding") {
            if !lengths.isEmpty {
                return .failure(.bad("both Transfer-Encoding and Content-Length; send only Content-Length"))
            }
            return .failure(
                ParseFailure(status: 501, reason: "Transfer-Encoding is not supported; send the body with Content-Length"))
        }
        guard let first = lengths.first else { return .success(0) }
        guard lengths.allSatisfy({ $0 == first }) else {
            return .failure(.bad("conflicting Content-Length headers"))
        }
        // Digits only: Int() would accept "+5", and more than 18 digits could overflow.
        guard !first.isEmpty, first.utf8.count <= 18, first.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let length = Int(first)
        else {
            return .failure(.bad("Content-Length must be a decimal number of bytes"))
        }
        guard length <= limits.maxBodyBytes else {
            return .failure(
                ParseFailure(status: 413, reason: "body of \(length) bytes exceeds \(limits.maxBodyBytes) bytes"))
        }
        return .success(length)
    }
}

private struct ParseFailure: Error {
    var status: Int
    var reason: String

    static func bad(_ reason: String) -> ParseFailure { ParseFailure(status: 400, reason: reason) }
}

private let cr: UInt8 = 13
private let lf: UInt8 = 10
private let space: UInt8 = 32
private let tab: UInt8 = 9
private let colon: UInt8 = 58
private let slash: UInt8 = 47

/// RFC 9110 tchar: what methods and header names may contain.
private func isTokenByte(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"):
        return true
    default:
        return Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
    }
}
