/// One run of one side: what it cost per datagram, and what held it below the offered rate.
struct Measurement {
    var delivered: Double
    /// CPU per datagram forwarded in the window, by the forwarder's own count; the relay
    /// executable, which has no exact count of a window, per datagram delivered.
    var cpuMicrosecondsPerDatagram: Double
    /// CPU per datagram the sink counted in the window: the one denominator every side has, so
    /// the executable's table compares all three over it.
    var cpuMicrosecondsPerDelivered: Double
    /// The relay executable's worker thread alone, per datagram delivered.
    var workerMicrosecondsPerDelivered: Double?
    var syscallsPerDatagram: Double
    var gsoShare: Double
    /// What the generator and the kernel saw of the run (LoadReading).
    var load: LoadFigures
}

/// The load's side of one run, the same for every side under test.
struct LoadFigures {
    /// Datagrams a second the kernel took from the source while it was sending.
    var sentPerSecond: Double
    /// The share of the source's datagrams the kernel refused to take.
    var refused: Double
    /// Drops the kernel counted at the forwarder's receiving socket and at the sink's, from the
    /// start of the window until the last datagram was through (a GRO buffer counts once).
    var forwarderDrops: UInt64
    var sinkDrops: UInt64
    /// The forwarder's process CPU while the source was sending, as a share of one CPU.
    var forwarderCPU: Double
    /// The source's and the sink's threads together, as a share of one CPU: the generator's.
    var generatorCPU: Double
    /// How busy the source's CPU and the forwarder's were meanwhile, whatever ran on them (the
    /// machine's other work too); nil when nothing is pinned.
    var busy: (source: Double, forwarder: Double)?
}

/// What held a run below its offered rate, judged by the load's figures alone, so that a run
/// the generator could not drive is never counted against the forwarder. Meant for `--pin
/// alone`: under `split` the sink shares the forwarder's CPU, and `sink` may be that CPU's
/// limit as much as the sink's.
enum Limit: String {
    /// At least `deliveredFloor` of what the source sent arrived, and the source sent the rate.
    case none
    /// The source did not get the rate into the kernel: it sent less than `sentFloor` of it, or
    /// the kernel refused some of its sends. The forwarder was not offered the rate.
    case source
    /// Lost, and only the sink's socket dropped: the generator's receiving half is the limit.
    case sink
    /// Lost, and only the forwarder's socket dropped: it did not take datagrams as fast as
    /// they came.
    case forwarder
    /// Lost, and both sockets dropped.
    case both = "forwarder+sink"
    /// Lost, and neither socket dropped (loopback's backlog queue, a send error).
    case unexplained

    /// The delivery a rate must reach to count as forwarded (issue 20: 99.9%).
    static let deliveredFloor = 0.999
    /// The share of the offered rate the source must have sent for the run to say anything
    /// about the forwarder; below it the generator is the limit.
    static let sentFloor = 0.99

    init(_ measurement: Measurement, rate: Int) {
        let load = measurement.load
        if load.sentPerSecond < Limit.sentFloor * Double(rate)
            || load.refused > 1 - Limit.deliveredFloor {
            self = .source
        } else if measurement.delivered >= Limit.deliveredFloor {
            self = .none
        } else {
            switch (load.forwarderDrops > 0, load.sinkDrops > 0) {
            case (true, true): self = .both
            case (true, false): self = .forwarder
            case (false, true): self = .sink
            case (false, false): self = .unexplained
            }
        }
    }
}
