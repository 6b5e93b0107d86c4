import FastPath

/// The kernel fast path as the tables see it. A refused install is counted by the fast path
/// (`refusals`) and not logged here: a full table refuses every new flow, and a line per flow
/// would flood the log exactly when the relay is busiest. The flow stays on the user-space
/// path, which is always correct.
extension KernelFastPath: FlowOffload {
    public func install(_ key: FlowKey, _ entry: FlowEntry) -> Bool {
        do {
            try put(key, entry)
            return true
        } catch {
            return false
        }
    }
}
