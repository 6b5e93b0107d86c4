import CBPF
import Glibc
import SystemSupport

/// The fast path's program attached to one interface's ingress by a tcx link
/// (BPF_LINK_CREATE with BPF_TCX_INGRESS). The link is a descriptor of this process and
/// nothing else holds it (no pin, no netlink filter): closing it, or the process ending in any
/// way, kill -9 included, detaches the program. libbpf 1.1 has no tcx helper, but its
/// bpf_link_create passes the attach type through to the kernel as it is.
final class InterfaceLink {
    let interface: String
    let index: UInt32
    private let link: Descriptor

    /// Attaches `program` to `interface` in the calling thread's network namespace.
    init(program: Int32, interface: String) throws(FastPathError) {
        let index = if_nametoindex(interface)
        guard index != 0 else {
            throw FastPathError("fast path: no interface named \(interface) here (\(SystemCallError.explain(errno)))")
        }
        LibbpfLog.clear()
        let result = bpf_link_create(program, Int32(index), bpf_attach_type(rawValue: UInt32(MR_BPF_TCX_INGRESS)), nil)
        guard result >= 0 else {
            throw FastPathError.failed("attaching to \(interface)'s ingress (tcx link)", code: -result, detail: LibbpfLog.last())
        }
        self.interface = interface
        self.index = index
        link = Descriptor(taking: result)
    }
}
