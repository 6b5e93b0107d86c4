import DatagramEngine
import Foundation
import Glibc
import NetAddress
import RelayCore
import RelayHTTP
import StatsKeys
import TLS
import SystemSupport

/// /v1/stats and /metrics, from the workers' latest snapshots and the kernel's accounting of
/// the whole process's CPU (getrusage), so the CPU per packet includes every thread.
struct StatsReport {
    let workers: [WorkerStats]
    let total: WorkerStats
    let engine: String
    let engineReason: String
    let uptime: Double
    let cpuUser: Double
    let cpuSystem: Double
    let sessions: Int
    let maxSessions: Int
    let draining: Bool
    /// Port-range occupancy: session legs (and RTCP companions) and forward-rule upstreams.
    let portsInUse: Int
    let portsTotal: Int
    /// What can refuse new work, and how much of it is taken (also what /readyz judges).
    let capacity: Capacity
    /// The certificate new TLS connections get (nil without TLS listeners).
    let certificate: TLSServerContext?
    let fastPath: FastPathReport

    init(relay: Relay, engine: String, engineReason: String, started: Date, fastPath: FastPathStatus) {
        workers = relay.stats()
        var total = WorkerStats(worker: -1)
        for worker in workers {
            total.engine.merge(worker.engine)
            total.drops.merge(worker.drops)
            total.ceMarks.merge(worker.ceMarks)
            total.sessions += worker.sessions
            total.forwardClients += worker.forwardClients
            total.sockets += worker.sockets
            total.lifecycle.merge(worker.lifecycle)
            total.turn.merge(worker.turn)
        }
        self.total = total
        self.engine = engine
        self.engineReason = engineReason
        uptime = Date().timeIntervalSince(started)
        let cpu = CPUTime.process()
        cpuUser = cpu.userSeconds
        cpuSystem = cpu.systemSeconds
        // The workers' own counts: sessions they expired are gone from these at once.
        sessions = total.sessions
        maxSessions = relay.maxSessions
        draining = relay.isDraining
        portsInUse = relay.settings.ports.held
        portsTotal = relay.settings.ports.range.count
        capacity = Capacity(relay: relay, workers: workers)
        certificate = relay.turnState.tlsContext
        self.fastPath = FastPathReport(fastPath)
    }

    var cpuNanosecondsPerPacket: Double {
        total.engine.datagramsIn == 0 ? 0 : (cpuUser + cpuSystem) * 1e9 / Double(total.engine.datagramsIn)
    }

    var syscallsPerPacket: Double {
        total.engine.datagramsIn == 0 ? 0 : Double(total.engine.syscalls) / Double(total.engine.datagramsIn)
    }

    static let packetsOutHelp = "Datagrams sent, by path: user (a worker, by worker) or kernel (the fast path)."
    static let bytesOutHelp = "Payload bytes sent, by path: user (a worker, by worker) or kernel (the fast path)."

    static let bucketNames = EngineCounters.batchSizeBounds.map(String.init) + ["+Inf"]

    static func counters(_ stats: WorkerStats) -> [String: Any] {
        let engine = stats.engine
        var histogram: [String: Any] = [:], turnHistogram: [String: Any] = [:]
        for (index, name) in bucketNames.enumerated() {
            histogram[name] = engine.batchSizes[index]
            turnHistogram[name] = engine.turnSizes[index]
        }
        var drops: [String: Any] = [:]
        let all = stats.allDrops
        for reason in DropReason.allCases { drops[reason.name] = all[reason] }
        var sendErrors: [String: Any] = [:]
        for (name, count) in engine.sendErrors.byName { sendErrors[name] = count }
        return [
            StatsKey.packetsIn: engine.datagramsIn, StatsKey.packetsOut: engine.datagramsOut,
            StatsKey.bytesIn: engine.bytesIn, StatsKey.bytesOut: engine.bytesOut,
            StatsKey.syscalls: engine.syscalls, StatsKey.receiveBatches: engine.receiveBatches,
            StatsKey.syscallsPerPacket: engine.datagramsIn == 0 ? 0 : Double(engine.syscalls) / Double(engine.datagramsIn),
            StatsKey.batchSizeHistogram: histogram,
            StatsKey.receiveTurns: engine.receiveTurns, StatsKey.turnSizeHistogram: turnHistogram,
            StatsKey.ecnIn: SessionJSON.ecn(engine.ecnIn), StatsKey.ecnOut: SessionJSON.ecn(engine.ecnOut),
            StatsKey.ceMarked: SessionJSON.ceMarks(stats.ceMarks),
            StatsKey.drops: drops, StatsKey.sendErrors: sendErrors,
            StatsKey.gsoSegments: engine.gsoSegments, StatsKey.gsoSends: engine.gsoSends, StatsKey.gsoFallbacks: engine.gsoFallbacks,
            StatsKey.groSegments: engine.groSegments,
            StatsKey.receiveRestarts: engine.receiveRestarts, StatsKey.receiveFailures: engine.receiveFailures,
            StatsKey.receiveCancelsForced: engine.receiveCancelsForced,
            StatsKey.sessions: stats.sessions, StatsKey.forwardClients: stats.forwardClients, StatsKey.sockets: stats.sockets,
            StatsKey.sessionsCreated: stats.lifecycle.sessionsCreated, StatsKey.sessionsDeleted: stats.lifecycle.sessionsDeleted,
            StatsKey.sessionsExpired: stats.lifecycle.sessionsExpired, StatsKey.forwardClientsCreated: stats.lifecycle.clientsCreated,
            StatsKey.forwardClientsExpired: stats.lifecycle.clientsExpired,
        ]
    }

    var json: [String: Any] {
        var object = StatsReport.counters(total)
        object[StatsKey.engine] = engine
        object[StatsKey.engineReason] = engineReason
        object[StatsKey.workers] = workers.count
        object[StatsKey.uptimeSeconds] = uptime
        object[StatsKey.draining] = draining
        object[StatsKey.cpuUserSeconds] = cpuUser
        object[StatsKey.cpuSystemSeconds] = cpuSystem
        object[StatsKey.cpuNsPerPacket] = cpuNanosecondsPerPacket
        object[StatsKey.sessions] = sessions
        object[StatsKey.sessionsMax] = maxSessions
        object[StatsKey.turn] = TurnStatsReport.json(total.turn)
        object[StatsKey.portsInUse] = portsInUse
        object[StatsKey.portsTotal] = portsTotal
        object[StatsKey.capacity] = capacity.json
        object[StatsKey.fastPath] = fastPath.json
        if let certificate {
            object[StatsKey.tlsCertificate] = [
                StatsKey.Certificate.subject: certificate.subject, StatsKey.Certificate.serial: certificate.serialNumber,
                StatsKey.Certificate.notAfter: certificate.notAfter,
                StatsKey.Certificate.secondsUntilExpiry: certificate.secondsUntilExpiry,
            ] as [String: Any]
        }
        object[StatsKey.perWorker] = workers.map { worker -> [String: Any] in
            var counters = StatsReport.counters(worker)
            counters[StatsKey.worker] = worker.worker
            // The worker thread's own CPU; the process figures above also hold the HTTP thread.
            counters[StatsKey.cpuUserSeconds] = worker.cpuUserSeconds
            counters[StatsKey.cpuSystemSeconds] = worker.cpuSystemSeconds
            let cpu = worker.cpuUserSeconds + worker.cpuSystemSeconds
            counters[StatsKey.cpuNsPerPacket] = worker.engine.datagramsIn == 0 ? 0 : cpu * 1e9 / Double(worker.engine.datagramsIn)
            return counters
        }
        return object
    }

    var prometheus: PrometheusText {
        var text = PrometheusText()
        text.gauge("mediarelay_info", help: "Version and the datagram backend in use.",
                   labels: [("version", ServerOptions.version), ("engine", engine)], value: 1)
        text.gauge("mediarelay_uptime_seconds", help: "Seconds since start.", value: uptime)
        text.gauge("mediarelay_workers", help: "Worker threads.", value: workers.count)
        text.gauge("mediarelay_draining", help: "1 while shutting down.", value: draining ? 1 : 0)
        for worker in workers {
            let label: PrometheusText.Labels = [("worker", String(worker.worker))]
            // Beside the kernel fast path's series of the same families (FastPathReport).
            let user = label + [("path", "user")]
            let engine = worker.engine
            text.counter("mediarelay_packets_in_total", help: "Datagrams received.", labels: label, value: engine.datagramsIn)
            text.counter("mediarelay_packets_out_total", help: Self.packetsOutHelp, labels: user, value: engine.datagramsOut)
            text.counter("mediarelay_bytes_in_total", help: "Payload bytes received.", labels: label, value: engine.bytesIn)
            text.counter("mediarelay_bytes_out_total", help: Self.bytesOutHelp, labels: user, value: engine.bytesOut)
            text.counter("mediarelay_syscalls_total", help: "I/O system calls (one io_uring_enter counts one).", labels: label, value: engine.syscalls)
            text.counter("mediarelay_receive_batches_total", help: "Receive calls that returned datagrams.", labels: label, value: engine.receiveBatches)
            let buckets = EngineCounters.batchSizeBounds.enumerated().map { (upperBound: Double($1), count: engine.batchSizes[$0]) }
                + [(upperBound: Double.infinity, count: engine.batchSizes[8])]
            text.histogram("mediarelay_batch_size", help: "Datagrams per receive call.", labels: label,
                           buckets: buckets, sum: Double(engine.datagramsIn))
            for codepoint in ECN.allCases {
                let labels = label + [("codepoint", codepoint.name)]
                text.counter("mediarelay_ecn_in_total", help: "Datagrams received by ECN codepoint.", labels: labels, value: engine.ecnIn(codepoint))
                text.counter("mediarelay_ecn_out_total", help: "Datagrams sent by ECN codepoint.", labels: labels, value: engine.ecnOut(codepoint))
            }
            for cause in CEMarkCause.allCases {
                text.counter("mediarelay_ce_marks_total",
                             help: "ECT datagrams the relay marked CE, by cause (CE that arrived is mediarelay_ecn_in_total{codepoint=\"ce\"}).",
                             labels: label + [("cause", cause.name)], value: worker.ceMarks[cause])
            }
            let drops = worker.allDrops
            for reason in DropReason.allCases {
                text.counter("mediarelay_drops_total", help: "Datagrams not forwarded, by reason.",
                             labels: label + [("reason", reason.name)], value: drops[reason])
            }
            for (name, count) in engine.sendErrors.all {
                text.counter("mediarelay_send_errors_total", help: "Sends the kernel refused, by errno.",
                             labels: label + [("errno", name)], value: count)
            }
            text.counter("mediarelay_gso_segments_total", help: "Datagrams sent as UDP GSO segments.", labels: label, value: engine.gsoSegments)
            text.counter("mediarelay_gro_segments_total", help: "Datagrams received as segments of a UDP GRO buffer.", labels: label,
                         value: engine.groSegments)
            text.counter("mediarelay_worker_cpu_seconds_total", help: "CPU time of the worker thread by mode.",
                         labels: label + [("mode", "user")], value: worker.cpuUserSeconds)
            text.counter("mediarelay_worker_cpu_seconds_total", help: "CPU time of the worker thread by mode.",
                         labels: label + [("mode", "system")], value: worker.cpuSystemSeconds)
            text.counter("mediarelay_sessions_created_total", help: "Sessions created.", labels: label, value: worker.lifecycle.sessionsCreated)
            text.counter("mediarelay_sessions_expired_total", help: "Sessions closed after idle_timeout_seconds.", labels: label,
                         value: worker.lifecycle.sessionsExpired)
            text.counter("mediarelay_receive_restarts_total", help: "io_uring multishot receives re-armed (many: buffers ran out, the worker is behind).",
                         labels: label, value: engine.receiveRestarts)
            TurnStatsReport.prometheus(worker.turn, worker: worker.worker, into: &text)
        }
        text.counter("mediarelay_cpu_seconds_total", help: "Process CPU time by mode.", labels: [("mode", "user")], value: cpuUser)
        text.counter("mediarelay_cpu_seconds_total", help: "Process CPU time by mode.", labels: [("mode", "system")], value: cpuSystem)
        text.gauge("mediarelay_cpu_ns_per_packet", help: "Process CPU nanoseconds per datagram received, since start.", value: cpuNanosecondsPerPacket)
        text.gauge("mediarelay_syscalls_per_packet", help: "I/O system calls per datagram received, since start.", value: syscallsPerPacket)
        text.gauge("mediarelay_sessions", help: "Sessions open.", value: sessions)
        text.gauge("mediarelay_sessions_max", help: "The session cap.", value: maxSessions)
        text.gauge("mediarelay_ports_in_use", help: "Ports of the relay's range held by session legs, forward clients and TURN.", value: portsInUse)
        text.gauge("mediarelay_ports_total", help: "Ports in the relay's range.", value: portsTotal)
        text.gauge("mediarelay_forward_clients", help: "Forward-rule clients with an upstream socket.", value: total.forwardClients)
        capacity.prometheus(into: &text)
        fastPath.prometheus(into: &text)
        if let certificate {
            // An expiry an operator can alert on before browsers refuse the relay (a renewal
            // that did not reach it: a failed hook, a SIGHUP never sent).
            text.gauge("mediarelay_tls_certificate_expiry_seconds",
                       help: "Seconds until the TLS listeners' certificate expires (negative: expired).",
                       value: certificate.secondsUntilExpiry)
        }
        return text
    }
}
