import DatagramEngine
import Glibc
import SystemSupport

/// The load's side of a run read at one moment, beside the forwarder's own reading: what the
/// source got the kernel to take, the CPU the forwarder and the generator (source and sink
/// threads) have used, and the pinned CPUs' idle time. Taken on the source's thread at the
/// start of the measured window and when the source stops sending; `LoadFigures` is the
/// difference. CPU comes from the kernel's CPU clocks, exact to the nanosecond; only the
/// CPUs' idle time comes from /proc/stat (see `KernelCounters.idleSeconds`).
struct LoadReading {
    let nanoseconds: UInt64
    let sent: UInt64
    let refused: UInt64
    let forwarderCPUSeconds: Double
    let generatorCPUSeconds: Double
    let sourceIdle: Double?
    let forwarderIdle: Double?

    init(source: DatagramEngine, sink: Sink, forwarder: ForwarderReading, placement: Placement?) {
        nanoseconds = MonotonicClock.now()
        sent = source.counters.datagramsOut
        refused = source.counters.sendErrors.total
        forwarderCPUSeconds = forwarder.cpuSeconds
        generatorCPUSeconds = seconds(of: CLOCK_THREAD_CPUTIME_ID) + seconds(of: sink.with { sink.cpuClock })
        sourceIdle = placement.flatMap { KernelCounters.idleSeconds($0.sourceCPU) }
        forwarderIdle = placement.flatMap { KernelCounters.idleSeconds($0.forwarderCPU) }
    }

    /// From `start` to this reading, with the drops the kernel counted at the two receiving
    /// sockets over the same window and its drain (`drops`, differences already taken).
    func figures(since start: LoadReading, drops: (forwarder: UInt64, sink: UInt64)) -> LoadFigures {
        let seconds = Double(nanoseconds - start.nanoseconds) / 1e9
        let sentInWindow = Double(sent - start.sent)
        let refusedInWindow = Double(refused - start.refused)
        func busy(_ end: Double?, _ begin: Double?) -> Double? {
            guard let end, let begin else { return nil }
            return min(max(1 - (end - begin) / seconds, 0), 1)
        }
        let busy = busy(sourceIdle, start.sourceIdle).flatMap { source in busy(forwarderIdle, start.forwarderIdle).map { (source, $0) } }
        return LoadFigures(sentPerSecond: sentInWindow / seconds,
                           refused: refusedInWindow / max(sentInWindow + refusedInWindow, 1),
                           forwarderDrops: drops.forwarder, sinkDrops: drops.sink,
                           forwarderCPU: (forwarderCPUSeconds - start.forwarderCPUSeconds) / seconds,
                           generatorCPU: (generatorCPUSeconds - start.generatorCPUSeconds) / seconds, busy: busy)
    }
}
