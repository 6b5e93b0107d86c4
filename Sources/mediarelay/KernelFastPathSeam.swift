import FastPath
import RelayCore

// MERGE(fp-kernel): the only calls of the executable that wait for the fp-kernel branch.
// That branch makes KernelFastPath Sendable and a FlowOffload, and adds `totals`, `refusals`
// and `attach(interface:mode:)` with `.tc` and `.xdp`. When it is merged, delete the
// @unchecked Sendable line and put the commented calls in place of today's bodies; nothing
// else in the executable changes.

// Today only the HTTP thread reads it after start, and no table installs entries yet.

/// What the executable asks of `KernelFastPath` beyond loading it.
enum KernelFastPathSeam {
    /// Attaches the program to `interface` as `attachment`, or throws the one line that says
    /// why not. An interface whose driver refuses native XDP throws for `.xdp`.
    static func attach(_ kernel: KernelFastPath, _ interface: String, as attachment: FastPathAttachment) throws {
        // MERGE(fp-kernel): try kernel.attach(interface: interface, mode: attachment == .xdp ? .xdp : .tc)
        guard attachment == .tc else { throw XDPNotBuilt() }
        try kernel.attach(interface: interface)
    }

    /// What the tables install entries through.
    static func offload(_ kernel: KernelFastPath) -> (any FlowOffload)? {
        kernel
    }

    /// Every datagram the kernel carried since the program was loaded, removed entries' included.
    static func totals(_ kernel: KernelFastPath) -> FlowCounters {
        kernel.totals
    }

    /// Entries the kernel refused.
    static func refusals(_ kernel: KernelFastPath) -> Int {
        kernel.refusals
    }

    private struct XDPNotBuilt: Error, CustomStringConvertible {
        var description: String { "fast path: this build has no XDP program yet" }
    }
}
