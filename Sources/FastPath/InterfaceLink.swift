import CBPF
import Glibc
import SystemSupport

/// One of the fast path's programs attached to one interface by a link (BPF_LINK_CREATE): the
/// tc program on its ingress (BPF_TCX_INGRESS), or the XDP program in its driver's receive
/// path (BPF_XDP, native mode). The link is a descriptor of this process and nothing else
/// holds it (no pin, no netlink filter): closing it, or the process ending in any way, kill -9
/// included, detaches the program. libbpf 1.1 has no tcx helper, but its bpf_link_create
/// passes the attach type through to the kernel as it is.
final class InterfaceLink {
    let interface: String
    let index: UInt32
    let mode: KernelFastPath.AttachMode
    private let link: Descriptor

    /// Attaches `program` to `interface` in the calling thread's network namespace.
    init(program: Int32, interface: String, mode: KernelFastPath.AttachMode) throws(FastPathError) {
        let index = if_nametoindex(interface)
        guard index != 0 else {
            throw FastPathError("fast path: no interface named \(interface) here (\(SystemCallError.explain(errno)))")
        }
        LibbpfLog.clear()
        let result: Int32
        switch mode {
        case .tc:
            result = bpf_link_create(program, Int32(index), bpf_attach_type(rawValue: UInt32(MR_BPF_TCX_INGRESS)), nil)
            guard result >= 0 else {
                throw FastPathError.failed("attaching to \(interface)'s ingress (tcx link)", code: -result, detail: LibbpfLog.last())
            }
        case .xdp:
            var options = bpf_link_create_opts()
            options.sz = MemoryLayout<bpf_link_create_opts>.size
            options.flags = MR_XDP_FLAGS_DRV_MODE
            result = bpf_link_create(program, Int32(index), BPF_XDP, &options)
            guard result >= 0 else {
                let code = -result
                // The driver has no native XDP, or not in this configuration (MTU, queues).
                if code == EOPNOTSUPP || code == EINVAL || code == ERANGE {
                    throw FastPathError("fast path: \(interface) does not take a native XDP program "
                                        + "(\(SystemCallError.explain(code))): use tc for it")
                }
                throw FastPathError.failed("attaching XDP to \(interface) (native)", code: code, detail: LibbpfLog.last())
            }
        }
        self.interface = interface
        self.index = index
        self.mode = mode
        link = Descriptor(taking: result)
    }
}
