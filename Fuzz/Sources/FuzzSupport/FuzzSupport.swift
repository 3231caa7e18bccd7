import CLibFuzzer

// What every fuzz target shares: the call into libFuzzer's driver and the property check.

/// Runs libFuzzer's driver on `testOneInput`, as libFuzzer's own `main` does; each target's
/// `<Target>_main` (the function SwiftPM links as `main`, see Package.swift) returns this.
public func runFuzzDriver(
    _ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
    _ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32 {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv, testOneInput)
}

/// Fails the run with `message` when `condition` is false. Unlike `precondition`, it keeps the
/// message in optimized builds, so libFuzzer's crash report says which property broke.
@inline(__always)
public func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}
