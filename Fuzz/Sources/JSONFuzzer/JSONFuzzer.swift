import FuzzSupport
import RunnelJSON

// The JSON validator, parser and writer on arbitrary bytes.
//
// Checked: the validator's and the parser's verdicts agree: when the validator rejects, the
// parser throws the very same error (reason and offset); when it accepts, the parser returns
// a value or, only for a number too large for a Double, `numberOutOfRange`. The generic
// `validate(_: Sequence)` agrees with the pointer one. A parsed value holds no non-finite
// number; written back by `JSONWriter` it is valid JSON that parses to an equal value, and
// writing that value again gives the same bytes (the writer's output is a fixed point).

@_cdecl("LLVMFuzzerTestOneInput")
public func jsonFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    // A small depth limit for some inputs, so the limit's edge is reached by short inputs.
    let maxDepth = size > 0 && data[0] == UInt8(ascii: " ") ? 4 : JSONLimits.defaultMaxDepth
    let validator = JSONValidator(maxDepth: maxDepth)
    let parser = JSONParser(maxDepth: maxDepth)

    var validatorError: JSONError?
    do throws(JSONError) {
        try validator.validate(bytes)
    } catch {
        validatorError = error
    }
    var sequenceError: JSONError?
    do throws(JSONError) {
        try validator.validate(Array(bytes))
    } catch {
        sequenceError = error
    }
    require(sequenceError == validatorError, "validate(Sequence) disagrees with validate(pointer)")
    require(validator.isValid(bytes) == (validatorError == nil), "isValid disagrees with validate")

    let parsed: JSONValue
    do throws(JSONError) {
        parsed = try parser.parse(bytes)
    } catch {
        if let validatorError {
            require(error == validatorError, "parser error \(error) differs from validator's \(validatorError)")
        } else {
            require(error.reason == .numberOutOfRange, "the parser rejects what the validator accepts: \(error)")
        }
        return 0
    }
    require(validatorError == nil, "the parser accepts what the validator rejects: \(validatorError!)")
    checkFinite(parsed)
    if case .number(let number) = parsed {
        // A number decodes as the standard library's correctly rounded parse does (the
        // decoder's fast path is its own arithmetic).
        let isWhitespace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        let start = bytes.firstIndex { !isWhitespace($0) }!
        let end = bytes.lastIndex { !isWhitespace($0) }! + 1
        let text = String(decoding: bytes[start..<end], as: UTF8.self)
        require(Double(text) == number, "\(text) decoded as \(number), not \(Double(text).map { "\($0)" } ?? "nil")")
    }

    var writer = JSONWriter()
    writer.write(parsed)
    let written = writer.bytes
    let reparsed: JSONValue
    do throws(JSONError) {
        // The written value has the same depth, so the same limit applies.
        reparsed = try parser.parse(written)
    } catch {
        fatalError("written JSON does not parse (\(error)): \(String(decoding: written, as: UTF8.self))")
    }
    require(reparsed == parsed, "written JSON parses to a different value")
    var again = JSONWriter()
    again.write(reparsed)
    require(again.bytes == written, "writing is not a fixed point")
    return 0
}

func checkFinite(_ value: JSONValue) {
    switch value {
    case .number(let number): require(number.isFinite, "a non-finite number was parsed")
    case .array(let elements): for element in elements { checkFinite(element) }
    case .object(let object): for member in object.members { checkFinite(member.value) }
    case .null, .bool, .string: break
    }
}

/// The entry point SwiftPM links as `main` (see Package.swift): libFuzzer's driver.
@_cdecl("JSONFuzzer_main")
public func jsonFuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzDriver(argc, argv) { data, size in jsonFuzzerTestOneInput(data!, size) }
}
