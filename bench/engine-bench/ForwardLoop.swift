import DatagramEngine
import NetAddress

/// The engine under test in `engine-bench serve`. GRO only in the +gro configurations (run with
/// `--source-gso`, whose bursts give it something to coalesce), as the C reference takes UDP_GRO
/// only with +gro; receive timestamps only in the +ts ones.
func forwarderConfiguration(_ configuration: Configuration) -> EngineConfiguration {
    EngineConfiguration(backend: configuration.backend, gso: configuration.gso, gro: configuration.gro,
                        receiveTimestamps: configuration.timestamps)
}

/// The relay executable's flags for the engine `engine-bench serve` runs in `configuration`:
/// every engine setting the relay takes from its command line, written from that one
/// `EngineConfiguration`, so the executable cannot be measured with another batch size,
/// datagram size (the relay's default is 9000 B, the harness's 2048, which sizes every receive
/// buffer), GSO or GRO than the harness. The rest (send capacity, io_uring buffer budget) the
/// relay leaves at the engine's defaults, as the harness does.
func relayEngineArguments(_ configuration: Configuration) -> [String] {
    let engine = forwarderConfiguration(configuration)
    return ["--engine", configuration.backend.rawValue, "--batch-size", "\(engine.batchSize)",
            "--max-datagram-size", "\(engine.maxDatagramSize)", "--gso", engine.gso ? "on" : "off", "--gro", engine.gro ? "on" : "off"]
}

/// The forwarding turn under test: whatever arrived leaves through `outbound` to `destination`
/// with its TOS byte, as the relay's forward rules and the C reference's `--to` do.
@inline(__always)
func forwardTurn(_ engine: DatagramEngine, through outbound: SocketID, to destination: Endpoint) {
    let count = engine.receive(timeoutMilliseconds: 20)
    for index in 0..<count {
        let datagram = engine.received(index)
        engine.enqueue(socket: outbound, to: destination, trafficClass: datagram.trafficClass, bytes: datagram.bytes)
    }
    engine.flush()
}
