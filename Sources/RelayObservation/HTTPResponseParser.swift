/// Parses the answer bytes: status line, headers, then a body delimited by Content-Length,
/// chunked encoding, or the end of the connection.
enum HTTPResponseParser {
    /// A response when `bytes` already holds all of it, else nil (keep reading).
    package static func complete(_ bytes: [UInt8]) -> HTTPClientResponse? { parse(bytes, atEOF: false) }

    package static func parse(_ bytes: [UInt8], atEOF: Bool) -> HTTPClientResponse? {
        guard let end = headerEnd(bytes) else { return nil }
        let head = String(decoding: bytes[0..<end], as: UTF8.self)
        let lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusParts = lines.first?.split(separator: " ") ?? []
        guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/1."), let status = Int(statusParts[1]) else { return nil }
        var contentLength: Int?
        var chunked = false
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmed(of: " \t")
            if name == "content-length" { contentLength = Int(value).flatMap { $0 >= 0 ? $0 : nil } }
            if name == "transfer-encoding", value.lowercased().contains("chunked") { chunked = true }
        }
        let bodyStart = end + 4
        let rest = Array(bytes[bodyStart...])
        if chunked { return dechunk(rest).map { HTTPClientResponse(status: status, body: $0) } }
        if let length = contentLength {
            guard rest.count >= length else { return nil }
            return HTTPClientResponse(status: status, body: Array(rest[0..<length]))
        }
        if status == 204 || status == 304 || (100..<200).contains(status) { return HTTPClientResponse(status: status, body: []) }
        return atEOF ? HTTPClientResponse(status: status, body: rest) : nil
    }

    private static func headerEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i
        }
        return nil
    }

    /// The body of a complete chunked encoding, or nil while incomplete.
    private static func dechunk(_ bytes: [UInt8]) -> [UInt8]? {
        var out: [UInt8] = []
        var i = 0
        while true {
            var j = i
            while j + 1 < bytes.count, !(bytes[j] == 13 && bytes[j + 1] == 10) { j += 1 }
            guard j + 1 < bytes.count else { return nil }
            let sizeText = String(decoding: bytes[i..<j], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmed(of: " "), radix: 16), size >= 0 else { return nil }
            i = j + 2
            if size == 0 { return out }
            guard bytes.count >= i + size + 2 else { return nil }
            out += bytes[i..<(i + size)]
            i += size + 2
        }
    }
}
