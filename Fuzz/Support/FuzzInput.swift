/// The bytes libFuzzer hands a target, with the two ways the targets read them: a few leading
/// bytes taken as choices (`take`), and the rest cut into pieces of lengths the input also
/// chooses (`pieces`), so a stream reader meets every way its bytes could have arrived.
///
/// Contract: total over any input: an empty one gives zero choices and one empty piece.
public struct FuzzInput {
    public private(set) var rest: ArraySlice<UInt8>

    public init(_ data: UnsafePointer<UInt8>?, _ count: Int) {
        rest = count > 0 && data != nil ? ArraySlice(UnsafeBufferPointer(start: data, count: count)) : []
    }

    /// The next byte as a choice, 0 once the input is spent.
    public mutating func take() -> UInt8 {
        rest.popFirst() ?? 0
    }

    /// What is left, cut into pieces: a first byte says how many lengths follow (up to 15),
    /// each length byte gives a piece of 1 to 256 bytes, and the lengths repeat in turn until
    /// the bytes after them are used up. No lengths means one piece, the whole rest.
    public mutating func pieces() -> [ArraySlice<UInt8>] {
        let count = Int(take() & 0x0F)
        var lengths: [Int] = []
        for _ in 0..<count where !rest.isEmpty { lengths.append(Int(take()) + 1) }
        guard !lengths.isEmpty else { return [rest] }
        var pieces: [ArraySlice<UInt8>] = []
        var start = rest.startIndex
        var turn = 0
        while start < rest.endIndex {
            let end = min(start + lengths[turn % lengths.count], rest.endIndex)
            pieces.append(rest[start..<end])
            start = end
            turn += 1
        }
        return pieces.isEmpty ? [rest] : pieces
    }
}

/// Stops the run as a finding when `condition` is false: an invariant the code under test
/// broke, not a crash, and libFuzzer records the input as it does for a crash.
public func expect(_ condition: @autoclosure () -> Bool, _ what: @autoclosure () -> String) {
    if !condition() { fatalError("fuzz invariant broken: \(what())") }
}
