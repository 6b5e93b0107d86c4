import FuzzSupport
import STUN

/// TURN over TCP or TLS as the relay cuts it (`StreamFrame`, then the STUN index or the
/// ChannelData header of each message): the same bytes arriving in the pieces the input
/// chooses must give the same messages, and the same verdict on what follows them, as the
/// bytes arriving at once. A connection's first message must be STUN, as on the relay.
func fuzzStreamFraming(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    var input = FuzzInput(data, count)
    let maximum = 64 + Int(input.take()) * 64
    let pieces = input.pieces()
    var inPieces = StreamCut(maximum: maximum)
    for piece in pieces { inPieces.receive(piece) }
    var atOnce = StreamCut(maximum: maximum)
    atOnce.receive(pieces.reduce(into: ArraySlice<UInt8>()) { $0 += $1 })
    expect(inPieces.messages == atOnce.messages, "messages differ by how the stream was cut")
    expect(inPieces.failure == atOnce.failure, "the verdict differs by how the stream was cut: \(String(describing: inPieces.failure)) in pieces, \(String(describing: atOnce.failure)) at once")
    return 0
}

/// One connection's reading side: its buffer, the messages cut from it, and the error that
/// ended it, if any.
struct StreamCut {
    let maximum: Int
    var buffer: [UInt8] = []
    var messages: [[UInt8]] = []
    var failure: StreamFrameError?

    init(maximum: Int) { self.maximum = maximum }

    mutating func receive(_ bytes: ArraySlice<UInt8>) {
        guard failure == nil else { return }
        buffer += bytes
        while failure == nil {
            let front = buffer.withUnsafeBytes { StreamFrame.front(of: $0, maximum: maximum, stunOnly: messages.isEmpty) }
            switch front {
            case .incomplete:
                return
            case .invalid(let error):
                failure = error
            case .message(let length, let consumed):
                expect(length <= consumed && consumed <= buffer.count && length <= maximum, "a frame beyond its bounds")
                let message = Array(buffer[0..<length])
                check(message)
                messages.append(message)
                buffer.removeFirst(consumed)
            }
        }
    }

    /// What the relay does next with a message the framer cut.
    private func check(_ message: [UInt8]) {
        message.withUnsafeBytes { raw in
            if ChannelData.isChannelData(raw[0]) {
                let parsed = ChannelData.parse(raw)
                expect(parsed != nil && parsed!.length + ChannelData.headerSize == message.count, "framed ChannelData that does not parse")
            } else {
                _ = try? AttributeIndex(parsing: raw)
            }
        }
    }
}
