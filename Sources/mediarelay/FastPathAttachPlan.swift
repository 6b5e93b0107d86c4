/// Which attachment each interface gets for a `--fast-path` mode, trying them in order:
/// `tc`: tc; `xdp`: XDP, else tc with a line saying why; `auto`: XDP (native), else tc,
/// silently. An interface where nothing attaches keeps its last refusal as its reason.
///
/// Contract: `attach` is called at most twice per interface, XDP before tc; it throws a
/// one-line error when the interface refuses. The result lists every interface once, in the
/// order given, and `notes` holds the lines to log (XDP refusals under `xdp`).
struct FastPathAttachPlan {
    private(set) var interfaces: [FastPathStatus.Interface] = []
    private(set) var notes: [String] = []

    init(_ names: [String], requested: FastPathMode, attach: (String, FastPathAttachment) throws -> Void) {
        let order: [FastPathAttachment] = switch requested {
        case .off: []
        case .tc: [.tc]
        case .xdp, .auto: [.xdp, .tc]
        }
        for name in names {
            var refusal = "not tried"
            var attached: FastPathAttachment?
            for attachment in order {
                do {
                    try attach(name, attachment)
                    attached = attachment
                    break
                } catch {
                    refusal = "\(error)"
                    if attachment == .xdp && requested == .xdp {
                        notes.append("fast path: \(name) refused XDP, so tc there instead (\(refusal))")
                    }
                }
            }
            interfaces.append(FastPathStatus.Interface(name: name, mode: attached, reason: attached == nil ? refusal : nil))
        }
    }

    var anyAttached: Bool { interfaces.contains { $0.mode != nil } }
}
