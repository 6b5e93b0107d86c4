import FuzzSupport
@testable import RelayHTTP

/// The control API's request parser over one connection's bytes, arriving in the pieces the
/// input chooses: the requests it reads (pipelined ones too) and its final verdict must be the
/// same as when the bytes arrive at once, and each result must stay within what it was given.
func fuzzHTTPRequest(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    var input = FuzzInput(data, count)
    // Small limits too, so the 431 and 413 paths are reached by short inputs.
    var limits = HTTPLimits()
    if input.take() & 1 == 1 {
        limits.maxHeaderBytes = 64 + Int(input.take())
        limits.maxBodyBytes = Int(input.take())
    }
    let pieces = input.pieces()
    var inPieces = HTTPConnectionReading(parser: HTTPRequestParser(limits: limits))
    for piece in pieces { inPieces.receive(piece) }
    var atOnce = HTTPConnectionReading(parser: HTTPRequestParser(limits: limits))
    atOnce.receive(pieces.reduce(into: ArraySlice<UInt8>()) { $0 += $1 })
    expect(inPieces.requests == atOnce.requests, "requests differ by how the bytes were cut")
    expect(inPieces.refusal == atOnce.refusal,
           "the verdict differs by how the bytes were cut: \(String(describing: inPieces.refusal)) in pieces, \(String(describing: atOnce.refusal)) at once")
    return 0
}

/// A connection's reading as the server does it: buffer, parse, consume what a complete
/// request used, stop at the first refusal.
struct HTTPConnectionReading {
    let parser: HTTPRequestParser
    var buffer: [UInt8] = []
    var requests: [HTTPRequest] = []
    var refusal: Int?

    mutating func receive(_ bytes: ArraySlice<UInt8>) {
        guard refusal == nil else { return }
        buffer += bytes
        while refusal == nil {
            switch parser.parse(buffer[...]) {
            case .incomplete:
                return
            case .awaitingBody(let total):
                expect(total > buffer.count, "awaiting a body that has arrived")
                return
            case .invalid(let status, _):
                expect((400..<600).contains(status), "a refusal that is no error status")
                refusal = status
            case .complete(let request, let consumed):
                expect(consumed > 0 && consumed <= buffer.count, "a request that used \(consumed) of \(buffer.count) bytes")
                expect(request.body.count <= parser.limits.maxBodyBytes, "a body over the limit")
                requests.append(request)
                buffer.removeFirst(consumed)
            }
        }
    }
}
