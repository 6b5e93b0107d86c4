import Synchronization

/// Set by the SIGINT handler of the process; every long wait (a run, a batch of connects or
/// TURN transactions, a session batch) notices it, stops and cleans up (deletes sessions).
public let interruptRequested = Atomic<Bool>(false)
