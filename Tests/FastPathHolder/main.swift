import FastPath
import Glibc
import NetAddress

// fastpath-holder INTERFACE SOURCE DESTINATION NEW_SOURCE NEW_DESTINATION EGRESS [tc|xdp]
// Test-only (FastPathTests): loads the fast path, attaches it to INTERFACE and EGRESS by tc
// (the default) or XDP, installs one plain entry (SOURCE -> DESTINATION rewritten to
// NEW_SOURCE -> NEW_DESTINATION, sent out of EGRESS), prints "ready" and waits to be killed. The test kills it with -9 and checks that
// the kernel forwards nothing after. Run it inside the relay's namespace (ip netns exec).
let arguments = CommandLine.arguments
let modes: [String: KernelFastPath.AttachMode] = ["tc": .tc, "xdp": .xdp]
guard arguments.count == 7 || arguments.count == 8, let mode = modes[arguments.count == 8 ? arguments[7] : "tc"],
      let source = Endpoint(parsing: arguments[2]), let destination = Endpoint(parsing: arguments[3]),
      let newSource = Endpoint(parsing: arguments[4]), let newDestination = Endpoint(parsing: arguments[5]) else {
    print("usage: fastpath-holder INTERFACE SOURCE DESTINATION NEW_SOURCE NEW_DESTINATION EGRESS [tc|xdp]")
    exit(2)
}
do {
    let fastPath = try KernelFastPath(capacity: 16)
    try fastPath.attach(interface: arguments[1], mode: mode)
    let egress = try fastPath.attach(interface: arguments[6], mode: mode)
    try fastPath.put(FlowKey(source: source, destination: destination),
                         FlowEntry(source: newSource, destination: newDestination, egressInterface: egress))
    print("ready")
    fflush(nil)
    while true { pause() }
} catch {
    print("\(error)")
    exit(1)
}
