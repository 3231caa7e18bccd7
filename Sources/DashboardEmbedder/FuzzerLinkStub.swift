/// Never called. The fuzz package (Fuzz/) is built with -sanitize=fuzzer,address for every
/// module, this build tool included, so libFuzzer is linked into the tool as well; GNU gold then
/// takes libFuzzer's own `main`, which refers to this function, and fails (with an internal
/// error) on the undefined reference. SwiftPM still links the tool's entry point as `main`, so
/// the tool runs as in any other build.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzerTestOneInputIsNeverCalled(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 { 0 }
