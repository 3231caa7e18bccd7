import Runnel
import RunnelExpression
import RunnelJSON
import RunnelProtocol

/// A stage's compiled expression together with the stage it belongs to, so that evaluating
/// it on a message decodes the message (once, through its shared `Payload`), binds
/// `$subject`, turns an evaluation error into the subscription's `eval` error naming the
/// stage, and charges the work to the connection's `EvaluationAccount` (which may refuse it:
/// `eval` / "limit"). Immutable and `Sendable`; evaluated on the loop thread. A class: the
/// chain's closures hold one reference and call it per value without copying (and retaining)
/// its fields, which a struct's call did, twice per stage per delivery.
final class StageExpression: Sendable {
    let compiled: CompiledExpression
    let stage: Int
    let name: String
    /// What evaluations are charged to; nil: no one (a chain compiled outside a server).
    let account: EvaluationAccount?
    /// The bindings of an expression of the value alone, which reads none: made once and
    /// passed by reference, where bindings made per value cost a copy and two destructions.
    private let noBindings = ExpressionBindings()

    init(_ compiled: CompiledExpression, _ arguments: StageArguments) {
        self.compiled = compiled
        self.stage = arguments.index
        self.name = arguments.name
        self.account = arguments.account
        compiled.users.count += 1
    }

    deinit {
        compiled.users.count -= 1
    }

    /// The expression's value on `input`, with `bindings` (whose `subject` the caller sets).
    func evaluate(_ input: JSONValue, _ bindings: ExpressionBindings) throws(ProtocolError) -> JSONValue {
        try value(of: metered(.tree(input), bindings, ValueEvaluation(output: false)))
    }

    /// The expression's value on `input` when the stage sends it on as a message: the cost of
    /// writing it out is charged to the evaluation's budget too (`evaluateOutput`).
    func evaluateOutput(_ input: JSONValue, _ bindings: ExpressionBindings) throws(ProtocolError) -> JSONValue {
        try value(of: metered(.tree(input), bindings, ValueEvaluation(output: true)))
    }

    private func value<Value>(of outcome: Result<Value, ExpressionError>) throws(ProtocolError) -> Value {
        switch outcome {
        case .success(let value): return value
        case .failure(let error): throw failure(error)
        }
    }

    /// The subscription's error for an evaluation error: `eval` naming the stage, or `eval`
    /// with the message "limit" when the evaluation passed its budget (as for
    /// `max_buffer_values`).
    func failure(_ error: ExpressionError) -> ProtocolError {
        if error.kind == .limit { return StageFailure.limit(stage: stage) }
        return StageFailure.eval("\(error.message) (at byte \(error.position))", stage: stage, name: name)
    }

    /// Whether the expression reads `message`'s value as its published bytes, in place by its
    /// paths: it reads the value only through paths, and the value has bytes and no tree yet
    /// (a part of a payload has no tree of its own).
    @inline(__always)
    private func readsBytes(of message: Message) -> Bool {
        !compiled.readsWholeInput && message.source.isPublished && (!message.part.isWhole || !message.source.isDecoded)
    }

    /// What the expression reads `message`'s value as: the published bytes (`readsBytes`),
    /// else the tree (decoded once and kept by the shared `Payload`). Valid while `message` is.
    @inline(__always)
    private func input(_ message: Message) throws(ProtocolError) -> ExpressionInput {
        guard readsBytes(of: message), let bytes = message.publishedBytes else { return .tree(try decoded(message)) }
        // The payload's index of its members describes its whole bytes, not a part of them.
        let payload = message.part.isWhole ? Unmanaged.passUnretained(message.source) : nil
        return .bytes(JSONValueBytes(validated: bytes), of: payload)
    }

    /// The expression's value on `message`'s value.
    func evaluate(_ message: Message) throws(ProtocolError) -> JSONValue {
        try value(of: metered(message, ValueEvaluation(output: false)))
    }

    /// One evaluation of `input`, admitted by the account and charged to it with the steps it
    /// used; the account's refusal is thrown, the evaluation's own outcome returned. The
    /// bindings are passed to `evaluation`, not captured by it: capturing copied them (and
    /// retained and released what they hold) twice per evaluation.
    @inline(__always)
    private func metered<Evaluated: StageEvaluation>(
        _ input: ExpressionInput, _ bindings: ExpressionBindings, _ evaluation: Evaluated
    ) throws(ProtocolError) -> Result<Evaluated.Value, ExpressionError> {
        try account?.admit(stage: stage)
        var meter = ExpressionMeter(compiled.budget)
        let outcome: Result<Evaluated.Value, ExpressionError>
        do {
            outcome = .success(try evaluation.run(compiled, input, bindings, &meter))
        } catch {
            outcome = .failure(error)
        }
        account?.charge(meter.stepsUsed)
        return outcome
    }

    /// `metered` on `message`'s value, with the bindings the expression reads: `$subject`, or
    /// none for an expression of the value alone.
    @inline(__always)
    private func metered<Evaluated: StageEvaluation>(_ message: Message, _ evaluation: Evaluated)
        throws(ProtocolError) -> Result<Evaluated.Value, ExpressionError>
    {
        let input = try input(message)
        // `input` may point into the message's bytes.
        defer { withExtendedLifetime(message) {} }
        guard compiled.dependsOnInputOnly else {
            return try metered(
                input, ExpressionBindings(subject: message.label.name, key: message.label.key), evaluation)
        }
        return try metered(input, noBindings, evaluation)
    }

    /// What `map` sends on for `message`: the expression's value, with `message`'s subject and
    /// position. A projection (`.p`) of a value read as its bytes, with an outcome no other
    /// stage shares, is the part of the bytes it names, carried without a payload of its own
    /// (`Message(madeFrom:projecting:)`); any other value is `evaluatedPayload`'s.
    @inline(__always)
    func mapped(_ message: Message) throws(ProtocolError) -> Message {
        guard compiled.isProjection, !compiled.outcomeIsShared, readsBytes(of: message) else {
            return Message(madeFrom: message, value: try evaluatedPayload(message))
        }
        guard let part = try value(of: metered(message, PartEvaluation())) else {
            return Message(madeFrom: message, value: Payload(raw: .null))
        }
        return Message(madeFrom: message, projecting: part)
    }

    /// The expression's value on `message`'s value, as a payload shared by every subscriber
    /// whose chain evaluates the same expression under the same budget on the same value and
    /// subject (see `Payload.memoized`). The outcome is shared too: an evaluation that fails, over its budget
    /// or otherwise, fails for each of them alike without being run again. (A refusal by the
    /// account is thrown, not kept: it is the connection's, not the value's.)
    ///
    /// A projection (`.p`) of a published value is the slice of its bytes the path names, as
    /// they are: never decoded, never encoded again (`Payload.projection`).
    func evaluatedPayload(_ message: Message) throws(ProtocolError) -> Payload {
        let source = message.value
        let outcome = try source.memoized(compiled, label: message.label) {
            () throws(ProtocolError) -> Result<Payload, ExpressionError> in
            try metered(message, PayloadEvaluation(source: source))
        }
        switch outcome {
        case .success(let payload): return payload
        case .failure(let error): throw failure(error)
        }
    }

    /// The expression's truthiness on `message`'s value.
    @inline(__always)
    func test(_ message: Message) throws(ProtocolError) -> Bool {
        guard compiled.outcomeIsShared else { return try value(of: metered(message, TruthEvaluation())) }
        let result = try evaluatedPayload(message)
        if let truth = result.decodedTruthiness { return truth }
        // A projection (`filter .active`): its slice, decoded (a scalar, usually).
        return try StageFailure.decoded(result, stage: stage, name: name).isTruthy
    }

    /// `message`'s value as a tree.
    func decoded(_ message: Message) throws(ProtocolError) -> JSONValue {
        try StageFailure.decoded(message.value, stage: stage, name: name)
    }
}

/// What one evaluation does with the input, the bindings and the meter `StageExpression`
/// gives it. A type for each, not a closure: `metered`, specialised for it, runs it in line,
/// where a closure would be a call of its own for every stage and value.
private protocol StageEvaluation {
    associatedtype Value
    func run(
        _ compiled: CompiledExpression, _ input: ExpressionInput, _ bindings: ExpressionBindings,
        _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> Value
}

/// The expression's value, charged for writing it out when `output`.
private struct ValueEvaluation: StageEvaluation {
    let output: Bool

    func run(
        _ compiled: CompiledExpression, _ input: ExpressionInput, _ bindings: ExpressionBindings,
        _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> JSONValue {
        try compiled.evaluate(input, bindings, output: output, on: &meter)
    }
}

/// The expression's truthiness (`CompiledExpression.test`).
private struct TruthEvaluation: StageEvaluation {
    @inline(__always)
    func run(
        _ compiled: CompiledExpression, _ input: ExpressionInput, _ bindings: ExpressionBindings,
        _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> Bool {
        try compiled.test(input, bindings, on: &meter)
    }
}

/// A projection's part of the input's bytes (`CompiledExpression.slice`); nil for `null`.
private struct PartEvaluation: StageEvaluation {
    @inline(__always)
    func run(
        _ compiled: CompiledExpression, _ input: ExpressionInput, _ bindings: ExpressionBindings,
        _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> Range<Int>? {
        try compiled.slice(of: input, bindings, on: &meter)?.range
    }
}

/// The value as a message's payload: a projection (`.p`) of `source`'s published bytes
/// (which `input` reads) is the slice of them it names, anything else the computed value.
private struct PayloadEvaluation: StageEvaluation {
    let source: Payload

    func run(
        _ compiled: CompiledExpression, _ input: ExpressionInput, _ bindings: ExpressionBindings,
        _ meter: inout ExpressionMeter
    ) throws(ExpressionError) -> Payload {
        if case .bytes = input, compiled.isProjection {
            guard let found = try compiled.slice(of: input, bindings, on: &meter) else { return Payload(raw: .null) }
            return Payload.projection(found.range, of: source)
        }
        return Payload(computed: try compiled.evaluate(input, bindings, output: true, on: &meter))
    }
}

/// A message with the outcome of a stage's test on it: what predicate operators (`filter`,
/// `takeWhile`, `throttle` with `expr`...) receive, so that the expression, which can fail,
/// runs in a `tryMap` before the library's non-throwing predicate reads the outcome.
struct TestedMessage: Sendable {
    let message: Message
    let passed: Bool
}

extension Signal where Value == Message {
    /// Each message with `expression`'s truthiness on it; an evaluation error ends the signal.
    func tested(by expression: StageExpression) -> Signal<TestedMessage> {
        tryMap { message in TestedMessage(message: message, passed: try expression.test(message)) }
    }
}

extension Signal where Value == TestedMessage {
    /// The messages again.
    var messages: Signal<Message> { map(\.message) }
}
