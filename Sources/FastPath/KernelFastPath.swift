import CBPF
import Glibc
import NetAddress
import Synchronization
import SystemSupport

/// The kernel fast path of one process: the BPF programs (relay.bpf.c, built with the package
/// and embedded: one for tc, one for XDP, sharing their maps) loaded, attached to the
/// interfaces given to `attach` (each by tc or by XDP), and the entries user space put in.
///
/// Contract:
/// - `init` loads, `attach` attaches; either throws a FastPathError whose description says in
///   one line why (no CAP_BPF, no BTF, an old kernel, a missing interface, a driver without
///   native XDP) and leaves nothing behind. Nothing is pinned: when this object ends, or the
///   process does (kill -9 included), the programs and their maps are gone, so a restarted
///   relay never inherits entries. `attach` does leave one setting: forwarding on `lo` in the
///   interface's namespace (LoopbackForwarding), which route lookups need. `attach` also reads
///   the host's settings the program must follow (HostSettings: TTL, hop limits, flow labels,
///   every interface's link address and reverse-path filtering) into the program's maps.
/// - `put` puts an entry in or replaces it; a replaced entry keeps its counters and its credits,
///   a new one starts with zero counters and zero credits; either way its idle time starts
///   again. A refused `put` throws and adds one to `refusals`. `remove` takes an entry out.
///   Each is one map operation, atomic for the packet path: a datagram sees the old entry or
///   the new one, never a mix.
/// - `counters` sums an entry's per-CPU counters; `totals` every entry's since the load.
/// - `lastForwarded`, `exchangeCredit` and `exchangePacketCredit` read and write memory shared
///   with the kernel: no system call.
/// - Safe from any thread: one lock guards which slot belongs to which flow and the map
///   updates. Every method is per flow (or per housekeeping pass), never per datagram.
public final class KernelFastPath: Sendable {
    /// How a program is attached to an interface. Both forward the same entries the same way.
    public enum AttachMode: Sendable, Equatable {
        /// tc (a tcx link on the interface's ingress): every driver, after the kernel has
        /// built a socket buffer.
        case tc
        /// XDP in the driver's receive path (native mode only: generic XDP runs after the
        /// socket buffer is built and saves nothing over tc). Where the driver has no native
        /// XDP, `attach` says so in one line, naming the interface. On veth the frames XDP
        /// redirects are delivered only when the peer of the target has GRO on or an XDP
        /// program of its own, and datagrams from local senders that leave the checksum to
        /// the kernel (offload on) are handed back, as XDP cannot finish their checksum.
        case xdp
    }

    /// The most entries the kernel map holds.
    public let capacity: Int
    /// The largest UDP payload the relay takes (`--max-datagram-size`): larger datagrams are
    /// handed back, and user space drops them as it does any datagram that large.
    public let maxPayload: Int
    /// libbpf's object, closed by deinit only; every other use is of descriptors it owns.
    nonisolated(unsafe) private let object: OpaquePointer
    private let tcProgram: Int32
    private let xdpProgram: Int32
    private let flows: Int32
    private let counterMap: Int32
    private let totalsMap: Int32
    private let configMap: Int32
    private let interfacesMap: Int32
    private let processors: Int
    private let memory: SlotMemory
    private let table: Mutex<Table>

    /// Which flow holds which slot, and what came with them.
    private struct Table: ~Copyable {
        var links: [InterfaceLink] = []
        var slots: [FlowKey: UInt32] = [:]
        var freeSlots: SlotPool
        var refusals = 0
        /// Whether entries carry an IPv6 flow label of the relay's own (net.ipv6.auto_flowlabels).
        var labelsFlows = true
    }

    public init(capacity: Int = 65_536, maxPayload: Int = 65_507) throws(FastPathError) {
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
        let object = try opened.get()
        do {
            memory = try SlotMemory(map: bpf_map__fd(bpf_object__find_map_by_name(object, "slots")), count: capacity)
        } catch {
            bpf_object__close(object)
            throw error
        }
        self.object = object
        tcProgram = bpf_program__fd(bpf_object__find_program_by_name(object, "mr_relay_ingress"))
        xdpProgram = bpf_program__fd(bpf_object__find_program_by_name(object, "mr_relay_xdp"))
        flows = bpf_map__fd(bpf_object__find_map_by_name(object, "flows"))
        counterMap = bpf_map__fd(bpf_object__find_map_by_name(object, "counters"))
        totalsMap = bpf_map__fd(bpf_object__find_map_by_name(object, "totals"))
        configMap = bpf_map__fd(bpf_object__find_map_by_name(object, "config"))
        interfacesMap = bpf_map__fd(bpf_object__find_map_by_name(object, "interfaces"))
        processors = Int(libbpf_num_possible_cpus())
        self.capacity = capacity
        self.maxPayload = maxPayload
        table = Mutex(Table(freeSlots: SlotPool(capacity: capacity)))
    }

    private static func prepareAndLoad(_ object: OpaquePointer, capacity: Int) -> Result<Void, FastPathError> {
        guard let program = bpf_object__find_program_by_name(object, "mr_relay_ingress"),
              bpf_object__find_program_by_name(object, "mr_relay_xdp") != nil else {
            return .failure(FastPathError("fast path: the embedded BPF object lacks its programs (a build problem)"))
        }
        for name in ["config", "interfaces"] where bpf_object__find_map_by_name(object, name) == nil {
            return .failure(FastPathError("fast path: the embedded BPF object lacks its map \(name) (a build problem)"))
        }
        for name in ["flows", "counters", "slots"] {
            guard let map = bpf_object__find_map_by_name(object, name) else {
                return .failure(FastPathError("fast path: the embedded BPF object lacks its map \(name) (a build problem)"))
            }
            bpf_map__set_max_entries(map, UInt32(capacity))
        }
        bpf_program__set_expected_attach_type(program, bpf_attach_type(rawValue: UInt32(MR_BPF_TCX_INGRESS)))
        let loaded = bpf_object__load(object)
        guard loaded == 0 else {
            return .failure(.failed("loading the BPF program", code: -loaded, detail: LibbpfLog.last()))
        }
        return .success(())
    }

    deinit {
        table.withLock { $0.links.removeAll() }
        bpf_object__close(object)
    }

    /// Attaches a program to `interface` (in the calling thread's network namespace) by
    /// `mode` and returns its index. Attaching again by the same mode is a no-op; by the other
    /// mode it is refused (a datagram would meet both programs). Turns forwarding on for that
    /// namespace's `lo` first (LoopbackForwarding): route lookups need it.
    @discardableResult
    public func attach(interface: String, mode: AttachMode = .tc) throws(FastPathError) -> UInt32 {
        let program = mode == .tc ? tcProgram : xdpProgram
        return try table.withLock { (table) throws(FastPathError) -> UInt32 in
            if let link = table.links.first(where: { $0.interface == interface }) {
                guard link.mode == mode else {
                    throw FastPathError("fast path: \(interface) already has the \(link.mode) program; one mode per interface")
                }
                return link.index
            }
            try LoopbackForwarding.enable()
            table.labelsFlows = try follow(HostSettings.read())
            let link = try InterfaceLink(program: program, interface: interface, mode: mode)
            table.links.append(link)
            return link.index
        }
    }

    /// Writes what the program must follow of the host's settings into its maps, before a
    /// program that reads them is attached; returns whether entries carry flow labels.
    private func follow(_ settings: HostSettings) throws(FastPathError) -> Bool {
        var zero: UInt32 = 0
        var config = settings.config(maxPayload: maxPayload)
        let written = bpf_map_update_elem(configMap, &zero, &config, UInt64(BPF_ANY))
        guard written == 0 else { throw .failed("writing the fast path's settings", code: -written) }
        for (index, interface) in settings.interfaces {
            var key = index
            var value = interface
            let result = bpf_map_update_elem(interfacesMap, &key, &value, UInt64(BPF_ANY))
            // Beyond the map's room an interface reads as not this host's, and its datagrams
            // are handed back: slower, never wrong.
            guard result == 0 || result == -E2BIG else { throw .failed("writing interface \(index)'s settings", code: -result) }
        }
        return settings.labelsFlows
    }

    /// The interfaces attached so far.
    public var interfaces: [String] { table.withLock { $0.links.map(\.interface) } }

    /// The interfaces attached so far, each with its mode.
    public var attachments: [(interface: String, mode: AttachMode)] {
        table.withLock { $0.links.map { ($0.interface, $0.mode) } }
    }

    /// The number of entries installed.
    public var count: Int { table.withLock { $0.slots.count } }

    /// How many `put`s were refused since the load (table full, an entry the kernel cannot
    /// carry, a map update that failed).
    public var refusals: Int { table.withLock { $0.refusals } }

    /// Puts `entry` in for `key`, or replaces the entry there (its counters and credits kept).
    public func put(_ key: FlowKey, _ entry: FlowEntry) throws(FastPathError) {
        try table.withLock { (table) throws(FastPathError) in
            do throws(FastPathError) {
                try put(key, entry, in: &table)
            } catch {
                table.refusals += 1
                throw error
            }
        }
    }

    private func put(_ key: FlowKey, _ entry: FlowEntry, in table: inout Table) throws(FastPathError) {
        if let refusal = entry.refusal(for: key) { throw FastPathError("fast path: \(refusal)") }
        let existing = table.slots[key]
        guard let slot = existing ?? table.freeSlots.take() else {
            throw FastPathError("fast path: \(key): the table is full (\(capacity) entries)")
        }
        if existing == nil { zeroCounters(slot) }
        // Before the entry is in: the kernel must never see a new entry with the last
        // occupant's idle time or credits.
        memory.start(slot, at: MonotonicClock.now(), clearCredit: existing == nil)
        var kernelKey = key.kernelKey
        var value = entry.kernelEntry(slot: slot, flowLabel: table.labelsFlows ? entry.flowLabel : 0)
        let result = bpf_map_update_elem(flows, &kernelKey, &value, UInt64(BPF_ANY))
        guard result == 0 else {
            if existing == nil { table.freeSlots.give(slot) }
            throw .failed("installing \(key)", code: -result)
        }
        table.slots[key] = slot
    }

    /// Takes the entry for `key` out; its datagrams go to user space from now on.
    public func remove(_ key: FlowKey) {
        table.withLock { table in
            guard let slot = table.slots.removeValue(forKey: key) else { return }
            var kernelKey = key.kernelKey
            _ = bpf_map_delete_elem(flows, &kernelKey)
            table.freeSlots.give(slot)
        }
    }

    /// The entry's counters summed over every CPU, or nil when `key` has no entry.
    public func counters(_ key: FlowKey) -> FlowCounters? {
        table.withLock { table in
            guard let slot = table.slots[key] else { return nil }
            return sum(counterMap, slot)
        }
    }

    /// Every datagram that matched an entry since the load, removed entries included, summed
    /// over every CPU: one system call.
    public var totals: FlowCounters { sum(totalsMap, 0) ?? FlowCounters() }

    /// When (MonotonicClock nanoseconds) the kernel last forwarded a datagram of `key`, or when
    /// the entry was installed if it has forwarded none since; nil without an entry.
    public func lastForwarded(_ key: FlowKey) -> UInt64? {
        table.withLock { table in table.slots[key].map { memory.lastForwarded($0) } }
    }

    /// Sets the entry's credit (bytes it may still send on before its datagrams are handed
    /// back) to `bytes` and returns what was left of the previous credit, below zero when
    /// CPUs forwarding at once took a little more than there was; nil without an entry.
    public func exchangeCredit(_ key: FlowKey, _ bytes: Int64) -> Int64? {
        table.withLock { table in table.slots[key].map { memory.exchangeCredit($0, bytes) } }
    }

    /// Sets the entry's packet credit (datagrams it may still send on before they are handed
    /// back) to `packets` and returns what was left of the previous one, below zero as the
    /// byte credit can be; nil without an entry.
    public func exchangePacketCredit(_ key: FlowKey, _ packets: Int64) -> Int64? {
        table.withLock { table in table.slots[key].map { memory.exchangePacketCredit($0, packets) } }
    }

    private func sum(_ map: Int32, _ slot: UInt32) -> FlowCounters? {
        var slot = slot
        var perCPU = [mr_fp_counters](repeating: mr_fp_counters(), count: processors)
        guard bpf_map_lookup_elem(map, &slot, &perCPU) == 0 else { return nil }
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
