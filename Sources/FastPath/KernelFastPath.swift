import CBPF
import Glibc
import NetAddress
import SystemSupport

/// The kernel fast path of one process: the BPF program (relay.bpf.c, built with the package
/// and embedded) loaded with its two maps, attached to the ingress of the interfaces given to
/// `attach`, and the entries user space put in.
///
/// Contract:
/// - `init` loads, `attach` attaches; either throws a FastPathError whose description says in
///   one line why (no CAP_BPF, no BTF, an old kernel, a missing interface) and leaves nothing
///   behind. Nothing is pinned: when this object ends, or the process does (kill -9 included),
///   the program and its maps are gone, so a restarted relay never inherits entries.
/// - `install` puts an entry in or replaces it; a replaced entry keeps its counters, a new one
///   starts at zero. `remove` takes it out. Each is one map operation, atomic for the packet
///   path: a datagram sees the old entry or the new one, never a mix.
/// - `counters` sums an entry's per-CPU counters.
/// - Not thread-safe: one owner (a worker's tables) calls it. Never called per datagram.
public final class KernelFastPath {
    /// The most entries the kernel map holds.
    public let capacity: Int
    private let object: OpaquePointer
    private let program: Int32
    private let flows: Int32
    private let counterMap: Int32
    private let processors: Int
    private var links: [InterfaceLink] = []
    private var slots: [FlowKey: UInt32] = [:]
    private var freeSlots: SlotPool

    public init(capacity: Int = 65_536) throws(FastPathError) {
        precondition(capacity > 0 && capacity <= Int(UInt32.max), "fast path capacity \(capacity)")
        try FastPathError.checkHost()
        LibbpfLog.install()
        LibbpfLog.clear()
        let bytes = EmbeddedObject.bytes(relayBPFObject.hex)
        // libbpf reads the ELF image until the load returns, so both happen inside one borrow.
        let opened: Result<OpaquePointer, FastPathError> = bytes.withUnsafeBytes { image in
            guard let object = bpf_object__open_mem(image.baseAddress, image.count, nil) else {
                return .failure(.failed("opening the embedded BPF object", code: errno, detail: LibbpfLog.last()))
            }
            let result = KernelFastPath.prepareAndLoad(object, capacity: capacity)
            if case .failure = result { bpf_object__close(object) }
            return result.map { object }
        }
        object = try opened.get()
        program = bpf_program__fd(bpf_object__find_program_by_name(object, "mr_relay_ingress"))
        flows = bpf_map__fd(bpf_object__find_map_by_name(object, "flows"))
        counterMap = bpf_map__fd(bpf_object__find_map_by_name(object, "counters"))
        processors = Int(libbpf_num_possible_cpus())
        self.capacity = capacity
        freeSlots = SlotPool(capacity: capacity)
    }

    private static func prepareAndLoad(_ object: OpaquePointer, capacity: Int) -> Result<Void, FastPathError> {
        guard let program = bpf_object__find_program_by_name(object, "mr_relay_ingress"),
              let flows = bpf_object__find_map_by_name(object, "flows"),
              let counters = bpf_object__find_map_by_name(object, "counters") else {
            return .failure(FastPathError("fast path: the embedded BPF object lacks its program or maps (a build problem)"))
        }
        bpf_program__set_expected_attach_type(program, bpf_attach_type(rawValue: UInt32(MR_BPF_TCX_INGRESS)))
        bpf_map__set_max_entries(flows, UInt32(capacity))
        bpf_map__set_max_entries(counters, UInt32(capacity))
        let loaded = bpf_object__load(object)
        guard loaded == 0 else {
            return .failure(.failed("loading the BPF program", code: -loaded, detail: LibbpfLog.last()))
        }
        return .success(())
    }

    deinit {
        links.removeAll()
        bpf_object__close(object)
    }

    /// Attaches the program to `interface`'s ingress (in the calling thread's network
    /// namespace) and returns its index, which entries name as their egress. Attaching twice
    /// to one interface is a no-op.
    @discardableResult
    public func attach(interface: String) throws(FastPathError) -> UInt32 {
        if let link = links.first(where: { $0.interface == interface }) { return link.index }
        let link = try InterfaceLink(program: program, interface: interface)
        links.append(link)
        return link.index
    }

    /// The interfaces attached so far.
    public var interfaces: [String] { links.map(\.interface) }

    /// The number of entries installed.
    public var count: Int { slots.count }

    /// Puts `entry` in for `key`, or replaces the entry there (its counters kept).
    public func install(_ key: FlowKey, _ entry: FlowEntry) throws(FastPathError) {
        if let refusal = entry.refusal(for: key) { throw FastPathError("fast path: \(refusal)") }
        let existing = slots[key]
        guard let slot = existing ?? freeSlots.take() else {
            throw FastPathError("fast path: \(key): the table is full (\(capacity) entries)")
        }
        if existing == nil { zeroCounters(slot) }
        var kernelKey = key.kernelKey
        var value = entry.kernelEntry(slot: slot)
        let result = bpf_map_update_elem(flows, &kernelKey, &value, UInt64(BPF_ANY))
        guard result == 0 else {
            if existing == nil { freeSlots.give(slot) }
            throw .failed("installing \(key)", code: -result)
        }
        slots[key] = slot
    }

    /// Takes the entry for `key` out; its datagrams go to user space from now on.
    public func remove(_ key: FlowKey) {
        guard let slot = slots.removeValue(forKey: key) else { return }
        var kernelKey = key.kernelKey
        _ = bpf_map_delete_elem(flows, &kernelKey)
        freeSlots.give(slot)
    }

    /// The entry's counters summed over every CPU, or nil when `key` has no entry.
    public func counters(_ key: FlowKey) -> FlowCounters? {
        guard var slot = slots[key] else { return nil }
        var perCPU = [mr_fp_counters](repeating: mr_fp_counters(), count: processors)
        guard bpf_map_lookup_elem(counterMap, &slot, &perCPU) == 0 else { return nil }
        var total = FlowCounters()
        for cpu in perCPU { total.add(cpu) }
        return total
    }

    private func zeroCounters(_ slot: UInt32) {
        var slot = slot
        var zeros = [mr_fp_counters](repeating: mr_fp_counters(), count: processors)
        _ = bpf_map_update_elem(counterMap, &slot, &zeros, UInt64(BPF_ANY))
    }
}
