import FuzzSupport
import RunnelJSON
import RunnelProtocol

// The request decoder: `EnvelopeScanner` on one line, then every field accessor.
//
// Checked: the scanner accepts exactly the lines the JSON validator accepts whose value is an
// object, and rejects every other line with `bad_json` and a precise message: the validator's
// own error, or "a request must be a JSON object". On an accepted line, each well-known
// field (and `field(named:)` for a few other keys of the line) is exactly the last member of
// that name in the parser's tree: same kind, its bytes valid JSON on their own that decode to
// the parser's value, strings and numbers read back equal; `operation()` names the op the
// string spells (or `.unknown`), or throws `bad_request`; `integer`, `scalarRef` and the
// other protocol reads return or throw `bad_request`, never trap.

@_cdecl("LLVMFuzzerTestOneInput")
public func requestFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let line = UnsafeRawBufferPointer(start: data, count: size)
    let maxDepth = size > 0 && data[0] == UInt8(ascii: " ") ? 3 : JSONLimits.defaultMaxDepth
    let scanner = EnvelopeScanner(maxDepth: maxDepth)

    var validatorError: JSONError?
    do throws(JSONError) {
        try JSONValidator(maxDepth: maxDepth).validate(line)
    } catch {
        validatorError = error
    }
    let tree = try? JSONParser(maxDepth: maxDepth).parse(line)

    let request: ScannedEnvelope
    do throws(ProtocolError) {
        request = try scanner.scan(line)
    } catch {
        require(error.code == .badJSON, "a rejected line must be bad_json: \(error)")
        if let validatorError {
            require(error.message == "invalid JSON: \(validatorError)", "imprecise error: \(error)")
        } else {
            require(error.message == "a request must be a JSON object", "imprecise error: \(error)")
            if let tree, case .object = tree { fatalError("a valid JSON object was rejected: \(error)") }
        }
        return 0
    }
    require(validatorError == nil, "accepted a line the validator rejects: \(validatorError!)")
    require(request.line.baseAddress == line.baseAddress && request.line.count == size, "wrong line")

    // The parser's view: nil when a number is too large for a Double (the scanner does not
    // decode numbers, so it accepts such lines).
    var object: JSONObject?
    if let tree {
        guard case .object(let members) = tree else { fatalError("accepted a line that is not an object") }
        object = members
    }

    for key in EnvelopeKey.allCases {
        check(request, request[key], name: key.name, object: object)
    }
    if let object {
        for name in object.keys.prefix(4) where !name.isEmpty {
            check(request, request.field(named: name), name: name, object: object)
        }
        require(request.field(named: "\u{1}absent") == nil || object["\u{1}absent"] != nil, "a phantom field")
    }

    // Protocol reads: a value or `bad_request`, never a trap.
    do throws(ProtocolError) {
        let operation = try request.operation()
        guard let op = request.op, let name = request.string(op) else { fatalError("an operation without an op") }
        switch operation {
        case .known(let known): require(known.rawValue == name, "op \(name) read as \(known)")
        case .unknown(let unknown):
            require(unknown == name && RequestOp(rawValue: name) == nil, "op \(name) read as unknown")
        }
    } catch {
        require(error.code == .badRequest, "operation threw \(error)")
        if let op = request.op { require(op.kind != .string, "a string op was refused: \(error)") }
    }
    for key in EnvelopeKey.allCases {
        expectBadRequest { () throws(ProtocolError) in _ = try request.string(key) }
        expectBadRequest { () throws(ProtocolError) in _ = try request.number(key) }
        expectBadRequest { () throws(ProtocolError) in
            if let integer = try request.integer(key) {
                require(request.number(request[key]!) == Double(integer), "integer differs from number")
            }
        }
        _ = request.rawJSON(key)
    }
    expectBadRequest { () throws(ProtocolError) in
        if let ref = try request.scalarRef() {
            require(ref.baseAddress == request.bytes(request.ref!).baseAddress, "ref is not the field's bytes")
        }
    }
    return 0
}

/// Runs a protocol read: it may throw only `bad_request`.
func expectBadRequest(_ read: () throws(ProtocolError) -> Void) {
    do throws(ProtocolError) {
        try read()
    } catch {
        require(error.code == .badRequest, "a field read threw \(error)")
    }
}

/// One top-level field against the last member of that name in the parsed object.
func check(_ request: ScannedEnvelope, _ field: EnvelopeField?, name: String, object: JSONObject?) {
    guard let field else {
        if let object { require(object[name] == nil, "field \(name) missed") }
        return
    }
    let range = field.range
    require(range.lowerBound >= 0 && range.upperBound <= request.line.count && !range.isEmpty, "bad range")
    let bytes = request.bytes(field)
    require(JSONValidator(maxDepth: .max).isValid(bytes), "field \(name)'s bytes are not JSON on their own")
    let decoded: JSONValue
    do throws(JSONError) {
        decoded = try request.decoded(field)
    } catch {
        require(error.reason == .numberOutOfRange, "field \(name) does not decode: \(error)")
        return
    }
    let kinds: [JSONValueKind: String] = [
        .null: "null", .bool: "boolean", .number: "number", .string: "string", .array: "array", .object: "object",
    ]
    require(kinds[field.kind] == decoded.typeName, "field \(name) has the wrong kind")
    if let object {
        guard let expected = object[name] else { fatalError("field \(name) is not in the parsed object") }
        require(decoded == expected, "field \(name) differs from the parser's")
    }
    switch decoded {
    case .string(let string): require(request.string(field) == string, "field \(name)'s string differs")
    case .number(let number): require(request.number(field) == number, "field \(name)'s number differs")
    case .bool(let flag): require(request.bool(field) == flag, "field \(name)'s boolean differs")
    default:
        require(request.string(field) == nil && request.number(field) == nil, "typed read of the wrong kind")
    }
    let raw = request.rawJSON(field)
    withExtendedLifetime(raw) {
        require(raw.buffer.bytes.elementsEqual(bytes), "rawJSON is not the field's bytes")
    }
}

/// The entry point SwiftPM links as `main` (see Package.swift): libFuzzer's driver.
@_cdecl("RequestFuzzer_main")
public func requestFuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzDriver(argc, argv) { data, size in requestFuzzerTestOneInput(data!, size) }
}
