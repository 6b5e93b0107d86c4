import FastPath
import RelayCore

// MERGE(fp-kernel): the only calls of the executable that wait for the fp-kernel branch.
// That branch makes KernelFastPath Sendable and a FlowOffload, and adds `totals`, `refusals`
// and `attach(interface:mode:)` with `.tc` and `.xdp`. When it is merged, delete the
// @unchecked Sendable line and put the commented calls in place of today's bodies; nothing
// else in the executable changes.

/// What the executable asks of `KernelFastPath` beyond loading it.
enum KernelFastPathSeam {
    /// Attaches the program to `interface` as `attachment`, or throws the one line that says
    /// why not. An interface whose driver refuses native XDP throws for `.xdp`.
    static func attach(_ kernel: KernelFastPath, _ interface: String, as attachment: FastPathAttachment) throws {
        // MERGE(fp-kernel): try kernel.attach(interface: interface, mode: attachment == .xdp ? .xdp : .tc)
        guard attachment == .tc else { throw XDPNotBuilt() }
        try kernel.attach(interface: interface)
    }

    private struct XDPNotBuilt: Error, CustomStringConvertible {
        var description: String { "fast path: this build has no XDP program yet" }
    }
}
