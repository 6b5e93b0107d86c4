import DatagramEngine
import NetAddress

/// The engine under test in `engine-bench serve`. GRO only in the +gro configurations (run with
/// `--source-gso`, whose bursts give it something to coalesce), as the C reference takes UDP_GRO
/// only with +gro; receive timestamps only in the +ts ones.
func forwarderConfiguration(_ configuration: Configuration) -> EngineConfiguration {
    EngineConfiguration(backend: configuration.backend, gso: configuration.gso, gro: configuration.gro,
                        receiveTimestamps: configuration.timestamps)
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
