import RunnelBytes
import RunnelJSON

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where `now()` reads the time: seconds since the Unix epoch. Tests inject a fixed one.
public typealias ExpressionClock = @Sendable () -> Double

/// The protocol's expression language: compile once when a `sub` names it, then evaluate per
/// value. See docs/protocol.md, "Expressions"; the choices it leaves open are documented on
/// `ExpressionEvaluator` (operators, paths), the node classes and `ExpressionFunction` (functions).
///
/// ```swift
/// let hot = try Expression.compile(".load > 0.9", variables: [])
/// let keep = try hot.evaluate(value, ExpressionBindings(subject: "cpu")).isTruthy
/// ```
public enum Expression {
    /// The protocol's default `max_expr_bytes`.
    public static let defaultMaxBytes = 4096
    /// The protocol's nesting limit.
    public static let defaultMaxDepth = 64

    /// The wall clock.
    public static let systemClock: ExpressionClock = {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1_000_000_000
    }

    /// Compiles `source`, or throws a `bad_expr` error with its message and byte position.
    ///
    /// - Parameters:
    ///   - variables: what the stage binds: `"acc"`, `"index"`, `"prev"`, and `"items"` (which
    ///     allows `$0`...`$9`; a single digit such as `"0"` allows just that one). `$subject`
    ///     is always allowed. Naming a variable the stage does not bind is a compile error.
    ///   - maxBytes: the longest source accepted, in UTF-8 bytes.
    ///   - maxDepth: the deepest nesting accepted (the whole expression is level 1; each group,
    ///     array item, object value, call argument, index, ternary branch and prefix operator
    ///     adds one).
    ///   - clock: what `now()` reads.
    ///   - budget: how much one evaluation may do (`max_eval_steps`, `max_eval_bytes`).
    public static func compile(
        _ source: String, variables: Set<String>, maxBytes: Int = defaultMaxBytes,
        maxDepth: Int = defaultMaxDepth, clock: @escaping ExpressionClock = systemClock,
        budget: ExpressionBudget = .standard
    ) throws(ExpressionError) -> CompiledExpression {
        let length = source.utf8.count
        guard length <= maxBytes else {
            throw .compile("expression is \(length) bytes, over the limit of \(maxBytes)", at: maxBytes)
        }
        let parsed = try Parser.parse(source, variables: variables, maxDepth: maxDepth, clock: clock)
        return CompiledExpression(
            source: source, root: parsed.root, dependsOnInputOnly: parsed.dependsOnInputOnly,
            dependsOnInputAndSubjectOnly: parsed.dependsOnInputAndSubjectOnly, readsWholeInput: parsed.readsWholeInput,
            budget: budget)
    }
}

/// A compiled expression: immutable, `Sendable`, evaluated any number of times from any thread.
public final class CompiledExpression: Sendable {
    /// The text it was compiled from.
    public let source: String
    package let root: ExpressionNode
    /// Whether the value depends on the input value alone: no variable (not even `$subject`)
    /// and no `now()`. The same input then always gives the same result, which lets the
    /// server compute it once per published value for every subscriber (`Payload.memo`).
    public let dependsOnInputOnly: Bool
    /// Whether the value depends on the input value and `$subject` alone (no other variable,
    /// no `now()`): the server computes it once per published value and subject.
    package let dependsOnInputAndSubjectOnly: Bool
    /// How much one evaluation may do; past it, an error of kind `.limit`.
    public let budget: ExpressionBudget
    /// Whether the expression reads its input whole (`.` on its own, as in `keys(.)`), so
    /// that evaluating it on bytes would decode them all: the caller should evaluate it on the
    /// decoded tree, which it can keep. Otherwise it reads the input only through paths
    /// (`.load`, `.a.b[2]`), which read a published value's bytes in place (`ExpressionInput`).
    package let readsWholeInput: Bool
    /// Whether the whole expression is one path from `.` (`.p`, `.a.b[0]`): its value is then
    /// a part of the input, unchanged, which `project` gives as a slice of the input's bytes.
    package let isProjection: Bool
    /// That path (`root`) when `isProjection`, else a path of no steps. Not an optional:
    /// unwrapping one retained and released the node on every evaluation.
    private let projection: ExpressionPathNode
    /// The expression as a comparison of one member with a number (`.load > 0.9`), which
    /// `test` answers on a published value's bytes without the tree; nil for any other.
    package let memberComparison: ExpressionMemberComparison?
    /// `memberComparison`, unretained (it lives as long as this): `test` calls it without
    /// the retain and release that reading the optional cost.
    private let memberComparisonRef: Unmanaged<ExpressionMemberComparison>?
    /// How many stages use this compiled form now (`StageExpression` counts itself in and
    /// out): a value keeps no outcome for others to share (`Payload.memoized`) when exactly
    /// one stage uses it.
    package let users = ExpressionUsers()

    /// Whether a value keeps this expression's outcome for other subscribers to share
    /// (`Payload.memoized`): it depends on the value and `$subject` alone, and not exactly one
    /// stage uses it (with one, nobody else would look).
    package var outcomeIsShared: Bool { dependsOnInputAndSubjectOnly && users.count != 1 }

    package init(
        source: String, root: ExpressionNode, dependsOnInputOnly: Bool, dependsOnInputAndSubjectOnly: Bool,
        readsWholeInput: Bool, budget: ExpressionBudget
    ) {
        self.source = source
        self.root = root
        self.dependsOnInputOnly = dependsOnInputOnly
        self.dependsOnInputAndSubjectOnly = dependsOnInputAndSubjectOnly
        self.budget = budget
        self.readsWholeInput = readsWholeInput
        if let path = root as? ExpressionPathNode, path.startsAtInput {
            (isProjection, projection) = (true, path)
        } else {
            (isProjection, projection) = (false, CompiledExpression.noProjection)
        }
        memberComparison = ExpressionMemberComparison(root)
        memberComparisonRef = memberComparison.map { Unmanaged.passUnretained($0) }
    }

    /// `projection` of an expression that is not one path.
    private static let noProjection = ExpressionPathNode(ExpressionInputNode(), [])

    /// The expression's value for `value`, or an `eval` error with the failing spot's position
    /// (kind `.limit` when the evaluation passed its budget).
    public func evaluate(_ value: JSONValue, _ bindings: ExpressionBindings = ExpressionBindings())
        throws(ExpressionError) -> JSONValue
    {
        var meter = ExpressionMeter(budget)
        return try evaluate(.tree(value), bindings, output: false, on: &meter)
    }

    /// The expression's value for a stage that sends it on as a message: as `evaluate`, and
    /// what writing the value out will cost is charged to the same budget, so that a small
    /// value holding many references to a large input (`[., ., .]`) fails here instead of
    /// being encoded at any size later.
    public func evaluateOutput(_ value: JSONValue, _ bindings: ExpressionBindings = ExpressionBindings())
        throws(ExpressionError) -> JSONValue
    {
        var meter = ExpressionMeter(budget)
        return try evaluate(.tree(value), bindings, output: true, on: &meter)
    }

    /// The expression's value for a published value read in place, as a stage reads it: paths
    /// scan its bytes to what they need and decode only that (see `ExpressionInput`), and
    /// member lookups go through `value`'s index of its members, which the first of them
    /// notes if the request's scan did not (`Payload.member(named:in:)`). The same value and
    /// error as `evaluate(value.decoded())`, except that a number too large for a Double fails
    /// only where the expression reads it (an `eval` error "cannot decode the value: ..."). A
    /// computed value is evaluated as its tree.
    public func evaluate(reading value: Payload, _ bindings: ExpressionBindings = ExpressionBindings())
        throws(ExpressionError) -> JSONValue
    {
        guard let published = value.publishedBytes else { return try evaluate(value.computedValue, bindings) }
        return try withExtendedLifetime(value) { () throws(ExpressionError) -> JSONValue in
            var meter = ExpressionMeter(budget)
            let bytes = JSONValueBytes(validated: published)
            return try evaluate(.bytes(bytes, of: Unmanaged.passUnretained(value)), bindings, output: false, on: &meter)
        }
    }

    /// When the expression is one path from `.` (`.p`, `.a.b[0]`): its value on `value`, as
    /// the exact bytes it has there (a copy of that slice; `null` when the path names
    /// nothing), with the cost of writing it out charged as for `evaluateOutput`. Nil for
    /// any other expression.
    public func project(_ value: RawJSON, _ bindings: ExpressionBindings = ExpressionBindings())
        throws(ExpressionError) -> RawJSON?
    {
        try withExtendedLifetime(value.buffer) { () throws(ExpressionError) -> RawJSON? in
            var meter = ExpressionMeter(budget)
            return try project(JSONValueBytes(validated: value.buffer.bytes), bindings, on: &meter)
        }
    }

    /// `project` on a meter the caller holds; nil when the expression is not a projection.
    package func project(_ bytes: JSONValueBytes, _ bindings: ExpressionBindings, on meter: inout ExpressionMeter)
        throws(ExpressionError) -> RawJSON?
    {
        guard isProjection else { return nil }
        guard let found = try slice(of: .bytes(bytes, of: nil), bindings, on: &meter) else { return .null }
        return RawJSON(validatedBuffer: ByteBuffer(copying: found.bytes))
    }

    /// For a projection (`isProjection`): the bytes it names in `input`'s bytes, left
    /// where they are, or nil for `null`; charged as `project` charges.
    @inline(__always)
    package func slice(of input: ExpressionInput, _ bindings: ExpressionBindings, on meter: inout ExpressionMeter)
        throws(ExpressionError) -> JSONValueBytes?
    {
        precondition(isProjection, "slice(of:) of an expression that is not a projection")
        guard case .bytes(let bytes, _) = input else { preconditionFailure("slice(of:) of a tree") }
        guard let found = try projection.select(in: bytes, input, bindings, &meter) else {
            try meter.chargeOutput(.null)
            return nil
        }
        try meter.chargeOutput(rawBytes: found.range.count)
        return found
    }

    /// `evaluate`, or `evaluateOutput` when `output`, on a meter the caller holds: it can read
    /// the steps used whether the evaluation succeeds or fails (`EvaluationAccount`).
    @inline(__always)
    package func evaluate(
        _ input: ExpressionInput, _ bindings: ExpressionBindings, output: Bool, on meter: inout ExpressionMeter
    )
        throws(ExpressionError) -> JSONValue
    {
        let result = try root.evaluate(input, bindings, &meter)
        if output { try meter.chargeOutput(result) }
        return result
    }

    /// The expression's truthiness on `input`, as `filter` tests it, on a meter the caller
    /// holds. A comparison of one member with a number is answered on a published value's
    /// bytes without the tree, when it can be (`ExpressionMemberComparison`).
    @inline(__always)
    package func test(_ input: ExpressionInput, _ bindings: ExpressionBindings, on meter: inout ExpressionMeter)
        throws(ExpressionError) -> Bool
    {
        if let memberComparisonRef, case .bytes(let bytes, let payload) = input,
            let truth = memberComparisonRef._withUnsafeGuaranteedRef({ $0.test(bytes, of: payload, &meter) })
        {
            return truth
        }
        return try root.evaluate(input, bindings, &meter).isTruthy
    }

    /// The expression's truthiness for a published value read in place, as a `filter` stage
    /// tests it, with the steps it cost (for tests and tools): the truthiness and the steps
    /// of `evaluate(reading:)`, or its error, however `test` reaches them.
    public func measureTest(reading value: Payload, _ bindings: ExpressionBindings = ExpressionBindings())
        throws(ExpressionError) -> (truth: Bool, steps: Int)
    {
        guard let published = value.publishedBytes else {
            let measured = try measure(value.computedValue, bindings)
            return (measured.value.isTruthy, measured.steps)
        }
        return try withExtendedLifetime(value) { () throws(ExpressionError) -> (truth: Bool, steps: Int) in
            var meter = ExpressionMeter(budget)
            let bytes = JSONValueBytes(validated: published)
            let truth = try test(.bytes(bytes, of: Unmanaged.passUnretained(value)), bindings, on: &meter)
            return (truth, meter.stepsUsed)
        }
    }

    /// The value with the steps and bytes it cost (for tests and tools).
    public func measure(
        _ value: JSONValue, _ bindings: ExpressionBindings = ExpressionBindings(), output: Bool = false
    ) throws(ExpressionError) -> (value: JSONValue, steps: Int, bytes: Int) {
        var meter = ExpressionMeter(budget)
        let result = try evaluate(.tree(value), bindings, output: output, on: &meter)
        return (result, meter.stepsUsed, meter.bytesUsed)
    }

    /// The expression's truthiness for `value` (`false` and `null` are false), as `filter` uses it.
    public func test(_ value: JSONValue, _ bindings: ExpressionBindings = ExpressionBindings())
        throws(ExpressionError) -> Bool
    {
        try evaluate(value, bindings).isTruthy
    }

    /// The value when the expression depends on nothing (it folded to a literal at compile time).
    public var constantValue: JSONValue? { root.literalValue }
}

/// The variables a stage binds for one evaluation. A plain struct: cheap to build per value;
/// a variable the stage does not use can be left at its default.
public struct ExpressionBindings: Sendable {
    /// `$acc`: the accumulator of `scan` and `aggregate`.
    public var acc: JSONValue
    /// `$index`: the 0-based position of the value in the stream (`scan`).
    public var index: Int
    /// `$prev`: the previous value (`combinePrevious`).
    public var prev: JSONValue
    /// `$0`...`$9`: the value's items (`reduceEach`); missing items are null.
    public var items: [JSONValue]
    /// `$subject`: the subject the value came from; null when nil.
    public var subject: String?
    /// `$key`: the map key the value was written to (version 1.3); null when nil.
    public var key: String?

    public init(
        acc: JSONValue = .null, index: Int = 0, prev: JSONValue = .null, items: [JSONValue] = [],
        subject: String? = nil, key: String? = nil
    ) {
        self.key = key
        self.acc = acc
        self.index = index
        self.prev = prev
        self.items = items
        self.subject = subject
    }
}

extension Expression {
    /// The brief's name for the bindings type.
    public typealias Bindings = ExpressionBindings
}

/// A count of the stages that use one `CompiledExpression`. Loop thread only, like the stages
/// that count themselves in it (`@unchecked Sendable` for the immutable expression holding it).
package final class ExpressionUsers: @unchecked Sendable {
    package var count = 0
}
