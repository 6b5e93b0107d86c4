import Glibc

/// A fuzz target's entry: one input (bytes and count) in, 0 out; it stops the process on a
/// finding (a trap, an AddressSanitizer report, a broken `expect`).
public typealias FuzzTarget = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt

/// Hands the process to libFuzzer's driver with `target`, and exits with its status. The
/// targets are executables of a package whose other executables (a build plugin's tool among
/// them) keep their own `main`, so libFuzzer is linked without its `main`
/// (libclang_rt.fuzzer_no_main, named by Fuzz/fuzz.sh) and entered here.
public func runLibFuzzer(_ target: FuzzTarget) -> Never {
    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, target))
}

@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<CInt>,
                                 _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
                                 _ target: FuzzTarget) -> CInt
