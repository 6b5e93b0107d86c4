/// Where an installed entry's shared state lives (its end, its credits, when it last
/// forwarded): what `KernelFastPath.slot` returns for an entry, so that its owner can move the
/// entry's end with a store to memory. Meaningful only while that entry is installed.
public struct FlowSlot: Hashable, Sendable {
    let index: UInt32

    public init(_ index: UInt32) { self.index = index }
}
