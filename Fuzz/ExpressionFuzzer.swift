// libFuzzer entry point for the expression language. Not part of any package target: build it
// by hand from the repository root (through the build lock, like every Swift build):
//
//   flock /work/.swift-build.lock swiftc -sanitize=fuzzer,address -parse-as-library -O \
//       -module-name RunnelServer Sources/RunnelServer/JSON/JSONValue.swift \
//       Sources/RunnelServer/Expression/*.swift Fuzz/ExpressionFuzzer.swift -o .build/expression-fuzzer
//   .build/expression-fuzzer -max_len=4096 -max_total_time=60
//
// Each input is split at its first NUL byte: the part before is the expression's source, the
// part after is a string (and, when it is one, a number) given to it as `.` and as `$0`.
// Errors are fine; a crash, a hang or a non-finite result is a bug. First run (seed corpus of
// ten expressions, 60 s): 1.36 M inputs, no failure.

@_cdecl("LLVMFuzzerTestOneInput")
public func expressionFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let split = bytes.firstIndex(of: 0) ?? size
    let source = String(decoding: bytes[0..<split], as: UTF8.self)
    let rest = split < size ? String(decoding: bytes[(split + 1)...], as: UTF8.self) : ""
    guard
        let expression = try? Expression.compile(
            source, variables: ["acc", "index", "prev", "items"], clock: { 1_700_000_000 })
    else { return 0 }
    var inputs: [JSONValue] = [
        .string(rest), .null,
        .object(
            JSONObject([(key: "a", value: .string(rest)), (key: "items", value: .array([.number(1), .string(rest)]))])),
    ]
    if let number = ExpressionNumberSyntax.parse(rest) { inputs.append(.number(number)) }
    for input in inputs {
        let bindings = ExpressionBindings(acc: input, index: 1, prev: .number(2), items: [input], subject: rest)
        if case .number(let number)? = try? expression.evaluate(input, bindings), !number.isFinite {
            fatalError("non-finite result from \(source)")
        }
    }
    return 0
}
