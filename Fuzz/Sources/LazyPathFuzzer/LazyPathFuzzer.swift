import FuzzSupport
import RunnelExpression
import RunnelJSON
import RunnelProtocol

// Lazy evaluation against full evaluation: an expression evaluated on a published value's
// bytes read in place (`CompiledExpression.evaluate(reading:)`, whose paths scan to the member
// they need, or find it through the index of members an earlier lookup, or the scan of the
// request that published it, noted) must give what it gives on the decoded tree (`evaluate`).
//
// Input layout, as ExpressionFuzzer's (whose corpus seeds this one): the bytes before the first
// NUL are the expression's source, the bytes after it the value, which must be valid JSON
// (nesting limit 64); anything else is skipped.
//
// Checked: for a value that decodes, both evaluations give equal values or the same error, and
// a projection (`project`, for a bare path) gives bytes that are valid JSON and decode to the
// same value, or fails as the evaluation does; a filter's test (`measureTest`) gives the full
// value's truthiness at the same steps, or its error. For a value that does not decode (a number too
// large for a Double: the one intended difference), lazy evaluation and projection do not
// trap, and a lazy result holds no non-finite number.

let variables: Set<String> = ["acc", "index", "prev", "items"]
let clock: ExpressionClock = { 1_700_000_000.5 }
let bindings = ExpressionBindings(
    acc: .number(1), index: 3, prev: .string("p"), items: [.number(1), .null], subject: "cpu")

@_cdecl("LLVMFuzzerTestOneInput")
public func lazyPathFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    guard let split = bytes.firstIndex(of: 0) else { return 0 }
    let source = String(decoding: bytes[0..<split], as: UTF8.self)
    guard let expression = try? Expression.compile(source, variables: variables, clock: clock),
        let raw = try? RawJSON(validating: UnsafeRawBufferPointer(rebasing: bytes[(split + 1)...]), maxDepth: 64)
    else { return 0 }

    // Twice on one payload: the first reading's member lookups note where the members sit,
    // the second's read that index. Then on the payload a `pub` of the value makes, whose
    // index the request's scan noted.
    let payload = Payload(raw: raw)
    let lazy = outcome { () throws(ExpressionError) in try expression.evaluate(reading: payload, bindings) }
    let indexed = outcome { () throws(ExpressionError) in try expression.evaluate(reading: payload, bindings) }
    require(indexed == lazy, "\(source) on \(raw): through the member index \(indexed), scanning \(lazy)")
    // (Compared with a scan of the same bytes: the request's value has no whitespace around
    // it, and an error's offset is into the bytes.)
    let (published, publishedRaw) = publishedPayload(raw)
    let scanned = outcome { () throws(ExpressionError) in try expression.evaluate(reading: published, bindings) }
    let unindexed = outcome { () throws(ExpressionError) in
        try expression.evaluate(reading: Payload(raw: publishedRaw), bindings)
    }
    require(
        scanned == unindexed, "\(source) on \(raw): through the index of a pub's scan \(scanned), scanning \(unindexed)"
    )
    let projected = outcome { () throws(ExpressionError) in try expression.project(raw, bindings) }
    guard let tree = try? raw.decoded() else {
        if case .success(let value) = lazy { require(isFinite(value), "a non-finite number in \(value)") }
        return 0
    }
    let full = outcome { () throws(ExpressionError) in try expression.evaluate(tree, bindings) }
    require(lazy == full, "\(source) on \(raw): lazily \(lazy), fully \(full)")

    // A filter's test: the truthiness and the steps of the full evaluation, or its error,
    // however it reaches them (a comparison of one member with a number, on the bytes).
    let measured = outcome { () throws(ExpressionError) in try expression.measure(tree, bindings) }
    for reading in [payload, published] {
        let tested = outcome { () throws(ExpressionError) in try expression.measureTest(reading: reading, bindings) }
        switch (tested, measured) {
        case (.success(let test), .success(let value)):
            require(
                test.truth == value.value.isTruthy && test.steps == value.steps,
                "\(source) on \(raw): tested \(test), fully \(value.value) in \(value.steps) steps")
        case (.failure(let error), .failure(let expected)):
            require(error == expected, "\(source) on \(raw): the test failed with \(error), fully \(expected)")
        default:
            fatalError("\(source) on \(raw): tested \(tested), fully \(measured)")
        }
    }

    switch (projected, full) {
    case (.success(nil), _):
        break
    case (.success(let slice?), .success(let value)):
        guard let decoded = try? RawJSON(validating: slice.description, maxDepth: 64).decoded() else {
            fatalError("\(source) on \(raw): projected \(slice), not valid JSON")
        }
        require(decoded == value, "\(source) on \(raw): projected \(slice), fully \(value)")
    case (.failure(let error), .failure(let expected)):
        require(error == expected, "\(source) on \(raw): projection failed with \(error), fully \(expected)")
    default:
        fatalError("\(source) on \(raw): projected \(projected), fully \(full)")
    }
    return 0
}

/// `raw` as a `pub` request publishes it: its payload, with the index of members the request's
/// scan noted, and its bytes.
func publishedPayload(_ raw: RawJSON) -> (Payload, RawJSON) {
    var line = Array(#"{"op":"pub","subject":"s","value":"#.utf8)
    raw.withUnsafeBytes { line.append(contentsOf: $0) }
    line.append(UInt8(ascii: "}"))
    return line.withUnsafeBytes { bytes in
        guard let scanned = try? EnvelopeScanner(maxDepth: .max).scan(bytes), let value = scanned.rawJSON(.value) else {
            fatalError("\(raw): not accepted as a pub's value")
        }
        return (Payload(raw: value, members: scanned.valueMembers), value)
    }
}

func outcome<Value>(_ body: () throws(ExpressionError) -> Value) -> Result<Value, ExpressionError> {
    Result { () throws(ExpressionError) in try body() }
}

func isFinite(_ value: JSONValue) -> Bool {
    switch value {
    case .number(let number): return number.isFinite
    case .array(let items): return items.allSatisfy(isFinite)
    case .object(let object): return object.members.allSatisfy { isFinite($0.value) }
    default: return true
    }
}

@_cdecl("LazyPathFuzzer_main")
public func lazyPathFuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzDriver(argc, argv) { data, size in lazyPathFuzzerTestOneInput(data!, size) }
}
