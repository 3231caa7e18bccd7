import FuzzSupport
import RunnelExpression
import RunnelJSON

// The expression language: compile, then evaluate what compiles.
//
// Input layout: the bytes before the first NUL are the expression's source; the bytes after
// it give the input value: parsed as JSON (nesting limit 8) when they are JSON, else taken
// as a string. A missing NUL means the input value is `null`.
//
// Checked: compiling is deterministic (twice the same outcome: the same error, or two
// expressions that evaluate alike); a compile error is `bad_expr` with a position within the
// source. Evaluation, against the derived value and a small fixed object, with fixed bindings
// and a fixed clock, returns a value or throws an `eval` error positioned inside the source;
// it never traps and never returns a non-finite number anywhere in the result; it is
// deterministic; a folded constant is what evaluation returns; an expression marked as
// depending on its input alone gives the same result whatever the bindings; and every result
// written by `JSONWriter` parses back to an equal value.

let variables: Set<String> = ["acc", "index", "prev", "items"]
let clock: ExpressionClock = { 1_700_000_000.5 }

@_cdecl("LLVMFuzzerTestOneInput")
public func expressionFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let split = bytes.firstIndex(of: 0) ?? size
    let source = String(decoding: bytes[0..<split], as: UTF8.self)
    let rest = split < size ? Array(bytes[(split + 1)...]) : nil
    let sourceLength = source.utf8.count

    let first = compile(source)
    let second = compile(source)
    let expression: CompiledExpression
    switch (first, second) {
    case (.failure(let error), .failure(let again)):
        require(error == again, "compiling twice gave \(error) then \(again)")
        require(error.kind == .badExpression, "a compile error of kind \(error.kind)")
        require(error.position >= 0 && error.position <= sourceLength, "compile error outside the source")
        return 0
    case (.success(let compiled), .success(let again)):
        require(compiled.source == source && again.source == source, "the source was not kept")
        require(compiled.dependsOnInputOnly == again.dependsOnInputOnly, "dependsOnInputOnly differs")
        require(compiled.constantValue == again.constantValue, "the folded constant differs")
        expression = compiled
        // The second compilation must behave as the first (checked on the inputs below).
        evaluateAndCheck(again, source: source, inputs: inputs(rest), reference: expression)
    default:
        fatalError("compiling twice gave different outcomes: \(first) then \(second)")
    }
    return 0
}

func compile(_ source: String) -> Result<CompiledExpression, ExpressionError> {
    do throws(ExpressionError) {
        return .success(try Expression.compile(source, variables: variables, clock: clock))
    } catch {
        return .failure(error)
    }
}

/// The values an expression is evaluated against: the one derived from the input, and a small
/// fixed object with the fields the seed expressions use.
func inputs(_ rest: [UInt8]?) -> [JSONValue] {
    var derived = JSONValue.null
    if let rest {
        if let value = try? JSONParser(maxDepth: 8).parse(rest) {
            derived = value
        } else {
            derived = .string(String(decoding: rest, as: UTF8.self))
        }
    }
    let fixed = JSONValue.object(
        JSONObject([
            (key: "a", value: .number(2)), (key: "b", value: .string("x")), (key: "s", value: .string("héllo")),
            (key: "x", value: .number(-7.5)), (key: "t", value: .bool(true)),
            (key: "items", value: .array([.number(1), .string("two"), .null, derived])),
            (key: "load", value: .number(0.95)), (key: "host", value: .string("h1")),
        ]))
    return [derived, fixed]
}

func evaluate(_ expression: CompiledExpression, _ value: JSONValue, _ bindings: ExpressionBindings)
    -> Result<JSONValue, ExpressionError>
{
    do throws(ExpressionError) {
        return .success(try expression.evaluate(value, bindings))
    } catch {
        return .failure(error)
    }
}

func evaluateAndCheck(
    _ expression: CompiledExpression, source: String, inputs: [JSONValue], reference: CompiledExpression
) {
    let length = source.utf8.count
    for input in inputs {
        let bindings = ExpressionBindings(
            acc: input, index: 3, prev: .number(2), items: [input, .string("b")], subject: "sensors.a.temp")
        let outcome = evaluate(expression, input, bindings)
        require(outcome == evaluate(expression, input, bindings), "evaluating twice differs: \(source)")
        require(outcome == evaluate(reference, input, bindings), "two compilations differ: \(source)")
        switch outcome {
        case .failure(let error):
            require(error.kind == .evaluation, "an evaluation error of kind \(error.kind): \(source)")
            require(error.position >= 0 && error.position < max(length, 1), "eval error outside the source")
        case .success(let value):
            checkFinite(value, source)
            if let constant = expression.constantValue {
                require(constant == value, "the folded constant is not the value: \(source)")
            }
            var writer = JSONWriter()
            writer.write(value)
            let reparsed = try? JSONParser(maxDepth: .max).parse(writer.bytes)
            require(reparsed == value, "the result does not survive writing: \(source)")
        }
        if expression.dependsOnInputOnly {
            let other = ExpressionBindings(acc: .string("other"), index: 9, prev: .null, items: [], subject: nil)
            require(
                outcome == evaluate(expression, input, other), "depends on more than its input: \(source)")
        }
    }
}

func checkFinite(_ value: JSONValue, _ source: String) {
    switch value {
    case .number(let number): require(number.isFinite, "a non-finite result from \(source)")
    case .array(let elements): for element in elements { checkFinite(element, source) }
    case .object(let object): for member in object.members { checkFinite(member.value, source) }
    case .null, .bool, .string: break
    }
}

/// The entry point SwiftPM links as `main` (see Package.swift): libFuzzer's driver.
@_cdecl("ExpressionFuzzer_main")
public func expressionFuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzDriver(argc, argv) { data, size in expressionFuzzerTestOneInput(data!, size) }
}
