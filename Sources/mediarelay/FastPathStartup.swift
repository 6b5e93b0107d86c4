import FastPath
import NetAddress

/// Start-up of the kernel fast path for `--fast-path` and `--fast-path-interface`: picks the
/// interfaces, loads the program once for the process and attaches it, and logs what came of
/// it. Where it cannot run (no CAP_BPF, CAP_NET_ADMIN or CAP_PERFMON, no BTF, an old kernel, no
/// such interface) it logs one line saying why and the relay runs on the user-space path.
enum FastPathStartup {
    /// `addresses`: every address the relay's datagram sockets bind (the relay address, UDP
    /// listeners, forward-rule listeners, TURN relayed addresses); with none given, the
    /// fast path attaches to the UP interfaces that carry one (all of them for a wildcard).
    static func start(_ options: ServerOptions, addresses: [Endpoint], log: Log) -> FastPathStatus {
        let requested = options.fastPath
        guard requested != .off else { return .off(.off, "--fast-path off") }
        let names: [String]
        if options.fastPathInterfaces.isEmpty {
            do {
                names = try HostInterfaces.read().carrying(addresses)
            } catch {
                return off(requested, "fast path: reading this host's interfaces: \(error)", log)
            }
            guard !names.isEmpty else {
                let shown = Set(addresses.map(\.hostText)).sorted().joined(separator: ", ")
                return off(requested, "fast path: no UP interface carries the relay's addresses (\(shown)); name one with --fast-path-interface", log)
            }
        } else {
            // An interface named twice is attached once.
            var seen = Set<String>()
            names = options.fastPathInterfaces.filter { seen.insert($0).inserted }
        }
        let kernel: KernelFastPath
        do {
            kernel = try KernelFastPath(maxPayload: options.maxDatagramSize)
        } catch {
            return off(requested, error.description, log)
        }
        let plan = FastPathAttachPlan(names, requested: requested) { name, attachment in
            try kernel.attach(interface: name, mode: attachment == .xdp ? .xdp : .tc)
        }
        guard plan.anyAttached else {
            let reasons = plan.interfaces.compactMap(\.reason)
            let reason = reasons.count == 1 ? reasons[0] : "fast path: no interface took it: " + reasons.joined(separator: "; ")
            return off(requested, reason, log, interfaces: plan.interfaces)
        }
        for note in plan.notes { log.warning(note) }
        for interface in plan.interfaces where interface.mode == nil {
            log.warning("fast path: not on \(interface.name): \(interface.reason ?? "")")
        }
        let status = FastPathStatus(requested: requested, interfaces: plan.interfaces, reason: nil, kernel: kernel)
        log.info("fast path \(requested.rawValue): \(status.attachedText), room for \(kernel.capacity) entries")
        return status
    }

    private static func off(_ requested: FastPathMode, _ reason: String, _ log: Log,
                            interfaces: [FastPathStatus.Interface] = []) -> FastPathStatus {
        log.warning("\(reason); fast path off, every datagram goes through user space")
        return .off(requested, reason, interfaces: interfaces)
    }
}
