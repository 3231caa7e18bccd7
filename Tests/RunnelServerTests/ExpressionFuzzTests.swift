import RunnelExpression
import RunnelJSON
import RunnelServer
import RunnelTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Random and mutated expressions over random JSON values: nothing may crash or hang, every
/// error must be of the right kind with a position inside the source, and every result must
/// be finite and the same when evaluated twice.
@Suite("Expression fuzzing")
struct ExpressionFuzzTests {
    static let corpus: [String] = [
        ".", ".a", ".a.b", ".items[0]", ".items[-1]", ".[\"odd key\"]", ".[0]", "$0.a", "(.a).b", "[1,2][0]",
        "1 + 2 * 3", "(1 + 2) * 3", "-.x", "!.t", ".x > 1 && .y < 2 || .z", ".a ? .b : .c", "\"a\" + .s",
        "[.a, .b] + .items", "{\"k\": .a, \"n\": $index}", "$acc + .", "$prev == .", "len(.s)", "abs(.x)",
        "floor(.x / 3)", "ceil(.x % 5)", "round(.x * 100)", "min(.a, .b)", "max($acc, .)", "str(.)", "num(.s)",
        "lower(.s)", "upper(.s)", "contains(.items, 1)", "contains(.s, \"a\")", "startsWith(.s, \"x\")",
        "endsWith($subject, \".temp\")", "keys(.)", "has(., \"a\")", "has(.items, -1)", "type(.)", "now() - .t",
        "{\"h\": .host, \"pct\": round(.load * 100)}", ".load > 0.9", ".[.k]", "$1 + $2", "len(keys(.)) == 2",
        "\"\\u00e9\\n\" + str([1, {\"a\": null}])", "1e308 * .x", ".a.b.c.d[0][1]", "-(-(-.x))", "0.1 + 0.2 == 0.3",
    ]

    static let fragments: [String] = [
        "(", ")", "[", "]", "{", "}", ".", ",", ":", "?", "+", "-", "*", "/", "%", "!", "==", "!=", "<", "<=", ">",
        ">=", "&&", "||", "\"", "\\", "\\u", "\\ud800", "\\ude00", "$", "$acc", "$index", "$prev", "$0", "$9",
        "$subject", "$x", "len(", "num(", "str(", "contains(", "has(", "keys(", "now()", "min(", "1e308", "1e-320",
        "0", "-0", "1.5", "01", "1e", "true", "false", "null", " ", "é", "😀", "\u{0}", "\n", "abc", "1e999", ".a",
        "[0]", "[-1]", "\"s\"", "=", "&", "|", "#", "'",
    ]

    static let keys = ["a", "b", "items", "x", "s", "t", "k", "odd key", "", "host", "load"]

    static func randomJSON(_ random: inout SplitMix64, depth: Int = 0) -> JSONValue {
        switch Int.random(in: 0..<(depth >= 3 ? 4 : 6), using: &random) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &random))
        case 2:
            let numbers: [Double] = [
                0, -0.0, 1, -1, 2, 3.5, 0.1, 1e308, -1e308, Double.leastNonzeroMagnitude, 9_007_199_254_740_994, 100,
                -7, 0.5,
            ]
            return Bool.random(using: &random)
                ? .number(numbers.randomElement(using: &random)!)
                : .number(Double(Int.random(in: -1000...1000, using: &random)) / 4)
        case 3:
            let strings = ["", "a", "héllo", "1", "-2.5", "a.b.temp", "\"", "😀x", "abcabd", "x", "NaN", " 7 "]
            return .string(strings.randomElement(using: &random)!)
        case 4:
            return .array(
                (0..<Int.random(in: 0...4, using: &random)).map { _ in randomJSON(&random, depth: depth + 1) })
        default:
            let members = (0..<Int.random(in: 0...4, using: &random)).map { _ in
                (key: keys.randomElement(using: &random)!, value: randomJSON(&random, depth: depth + 1))
            }
            return .object(JSONObject(members))
        }
    }

    static func randomSource(_ random: inout SplitMix64) -> String {
        var scalars = Array(corpus.randomElement(using: &random)!.unicodeScalars)
        for _ in 0..<Int.random(in: 0...3, using: &random) {
            let at = Int.random(in: 0...scalars.count, using: &random)
            switch Int.random(in: 0..<6, using: &random) {
            case 0:  // insert a fragment
                scalars.insert(contentsOf: fragments.randomElement(using: &random)!.unicodeScalars, at: at)
            case 1:  // delete a range
                let end = Swift.min(scalars.count, at + Int.random(in: 1...4, using: &random))
                scalars.removeSubrange(at..<end)
            case 2:  // duplicate a range
                let end = Swift.min(scalars.count, at + Int.random(in: 1...8, using: &random))
                scalars.insert(contentsOf: Array(scalars[at..<end]), at: at)
            case 3:  // splice in another corpus entry
                scalars.insert(contentsOf: corpus.randomElement(using: &random)!.unicodeScalars, at: at)
            case 4:  // replace a scalar
                if at < scalars.count {
                    scalars[at] = fragments.randomElement(using: &random)!.unicodeScalars.first ?? " "
                }
            default:  // a run of random fragments
                let run = (0..<Int.random(in: 1...6, using: &random)).map { _ in
                    fragments.randomElement(using: &random)!
                }
                scalars.insert(contentsOf: run.joined().unicodeScalars, at: at)
            }
        }
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars)
        return String(view)
    }

    static func allFinite(_ value: JSONValue) -> Bool {
        switch value {
        case .number(let number): return number.isFinite
        case .array(let items): return items.allSatisfy(allFinite)
        case .object(let object): return object.members.allSatisfy { allFinite($0.value) }
        default: return true
        }
    }

    @Test func randomAndMutatedExpressionsNeverCrash() {
        var random = SplitMix64(seed: 0x5EED_1234)
        let allVariables: Set<String> = ["acc", "index", "prev", "items"]
        var compiled = 0
        var evaluated = 0
        var problems: [String] = []
        for _ in 0..<20_000 {
            let source = Self.randomSource(&random)
            let variables = Int.random(in: 0..<4, using: &random) == 0 ? [] : allVariables
            let maxDepth = Int.random(in: 0..<8, using: &random) == 0 ? Int.random(in: 1...4, using: &random) : 64
            let expression: CompiledExpression
            do {
                expression = try Expression.compile(
                    source, variables: variables, maxDepth: maxDepth, clock: { ExpressionTesting.fixedNow })
            } catch {
                if error.kind != .badExpression || error.position < 0 || error.position > source.utf8.count {
                    problems.append("compile \(source): \(error)")
                }
                continue
            }
            compiled += 1
            for _ in 0..<2 {
                let input = Self.randomJSON(&random)
                let bindings = ExpressionBindings(
                    acc: Self.randomJSON(&random), index: Int.random(in: 0...100, using: &random),
                    prev: Self.randomJSON(&random), items: (0..<3).map { _ in Self.randomJSON(&random) },
                    subject: Bool.random(using: &random) ? "sensors.a.temp" : nil)
                do {
                    let result = try expression.evaluate(input, bindings)
                    evaluated += 1
                    if !Self.allFinite(result) { problems.append("non-finite from \(source)") }
                    if (try? expression.evaluate(input, bindings)) != result {
                        problems.append("not deterministic: \(source)")
                    }
                } catch {
                    if error.kind != .evaluation || error.position < 0 || error.position >= source.utf8.count {
                        problems.append("eval \(source): \(error)")
                    }
                }
            }
        }
        #expect(problems.isEmpty, "\(problems.prefix(10))")
        // The mutations must leave enough valid expressions for evaluation to be exercised.
        #expect(compiled > 4_000)
        #expect(evaluated > 2_000)
    }

    /// The deepest nesting allowed, with every precedence level used at each level, compiled and
    /// evaluated on a thread with a 2 MiB stack, a quarter of a default Linux thread's. Measured: it needs
    /// about 1 MiB unoptimised (frames of 0.3 to 1.2 KiB per node) and a tenth of that in
    /// release; the margin covers sanitizer builds.
    @Test func deepestNestingRunsOnASmallStack() throws {
        // Each level: ?: → || → && → == → + → * → path → array item, then the next level.
        var source = "."
        for _ in 0..<63 { source = ". == . + . * [\(source)][0] && . || . ? . : ." }
        #expect(ExpressionTesting.compileError(source) == nil)
        #expect(ExpressionTesting.compileError("[" + source + "]") != nil)  // one more level is refused

        final class Job: @unchecked Sendable {
            let source: String
            var outcome: String = "not run"
            init(_ source: String) { self.source = source }
        }
        let job = Job(source)
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setstacksize(&attributes, 2 * 1024 * 1024)
        #if canImport(Darwin)
            var thread: pthread_t? = nil
        #else
            var thread = pthread_t()
        #endif
        let created = pthread_create(
            &thread, &attributes,
            { raw in
                let job = Unmanaged<Job>.fromOpaque(raw!).takeRetainedValue()
                do {
                    let expression = try ExpressionTesting.compile(job.source)
                    job.outcome = "value \(try expression.evaluate(.number(1)))"
                } catch {
                    job.outcome = "error \(error)"
                }
                return nil
            }, Unmanaged.passRetained(job).toOpaque())
        #expect(created == 0)
        #if canImport(Darwin)
            pthread_join(thread!, nil)
        #else
            pthread_join(thread, nil)
        #endif
        pthread_attr_destroy(&attributes)
        #expect(job.outcome == "value number(1.0)")
    }
}
